/**
 * The names of Whizbang's `wh_` tables and their columns, in one place, for the SQL of the operations
 * (`../sql/*.ts`). A statement interpolates them (`${PerspectiveCursors.streamId}`) instead of spelling them, and
 * an operation reads its row's fields from them (`columns: { streamId: PerspectiveCursors.streamId }`), so:
 * - renaming a column here renames it in every statement and row schema that uses it;
 * - removing or renaming a key here fails to compile at every statement and row schema that uses it.
 *
 * The keys are the drizzle schema's (`../schema/*.ts`, what drizzle-kit generates the migrations from) and the
 * values its column names; `test/Columns.test.ts` checks both agree, at compile time and at run time, so a column
 * renamed in the drizzle schema fails to compile here too. The two tables of migration 0005 have no drizzle
 * table: their names are checked against the migrations' SQL instead (its CREATE TABLE and later ADD COLUMNs). Plain strings, no drizzle-orm: the main
 * entry never imports it.
 *
 * `table` is each table's name (no `wh_` table has a column called `table`).
 *
 * @internal
 */

/** `wh_events`. @internal */
export const Events = {
  table: "wh_events",
  eventId: "event_id",
  streamId: "stream_id",
  streamVersion: "stream_version",
  eventType: "event_type",
  payload: "payload",
  metadata: "metadata",
  scope: "scope",
  createdAt: "created_at"
} as const

/** `wh_perspective_events`, the work queue. @internal */
export const PerspectiveEvents = {
  table: "wh_perspective_events",
  workId: "work_id",
  streamId: "stream_id",
  perspectiveName: "perspective_name",
  eventId: "event_id",
  instanceId: "instance_id",
  leaseExpiry: "lease_expiry",
  attempts: "attempts",
  error: "error",
  scheduledFor: "scheduled_for",
  partitionNumber: "partition_number",
  processedAt: "processed_at",
  fires: "fires",
  createdAt: "created_at"
} as const

/** `wh_perspective_cursors`, with the stream-lock columns. @internal */
export const PerspectiveCursors = {
  table: "wh_perspective_cursors",
  streamId: "stream_id",
  perspectiveName: "perspective_name",
  lastEventId: "last_event_id",
  status: "status",
  error: "error",
  processedAt: "processed_at",
  rewindTriggerEventId: "rewind_trigger_event_id",
  rewindFirstFlaggedAt: "rewind_first_flagged_at",
  rewindFlaggedAt: "rewind_flagged_at",
  streamLockInstanceId: "stream_lock_instance_id",
  streamLockExpiry: "stream_lock_expiry",
  streamLockReason: "stream_lock_reason"
} as const

/** `wh_active_streams`, stream leases. @internal */
export const ActiveStreams = {
  table: "wh_active_streams",
  streamId: "stream_id",
  instanceId: "instance_id",
  partitionNumber: "partition_number",
  leaseExpiry: "lease_expiry"
} as const

/** `wh_lifecycle_pending`. @internal */
export const LifecyclePending = {
  table: "wh_lifecycle_pending",
  eventId: "event_id",
  streamId: "stream_id",
  claimedBy: "claimed_by",
  claimedAt: "claimed_at",
  createdAt: "created_at"
} as const

/** `wh_service_instances`, heartbeats. @internal */
export const ServiceInstances = {
  table: "wh_service_instances",
  instanceId: "instance_id",
  serviceName: "service_name",
  hostName: "host_name",
  processId: "process_id",
  startedAt: "started_at",
  lastHeartbeatAt: "last_heartbeat_at",
  metadata: "metadata",
  perspectiveNames: "perspective_names"
} as const

/** `wh_dead_letters`. @internal */
export const DeadLetters = {
  table: "wh_dead_letters",
  id: "id",
  workId: "work_id",
  streamId: "stream_id",
  perspectiveName: "perspective_name",
  eventId: "event_id",
  eventType: "event_type",
  payload: "payload",
  error: "error",
  attempts: "attempts",
  createdAt: "created_at"
} as const

/** `wh_perspective_snapshots`. @internal */
export const PerspectiveSnapshots = {
  table: "wh_perspective_snapshots",
  streamId: "stream_id",
  perspectiveName: "perspective_name",
  eventId: "event_id",
  data: "data",
  createdAt: "created_at"
} as const

/**
 * `wh_perspective_versions`, the versions registry (migration 0005; the hand-over's columns from 0016, the replay's
 * start from 0018). @internal
 */
export const PerspectiveVersions = {
  table: "wh_perspective_versions",
  perspectiveName: "perspective_name",
  baseName: "base_name",
  version: "version",
  state: "state",
  eventTypes: "event_types",
  registeredAt: "registered_at",
  stateChangedAt: "state_changed_at",
  retireAfter: "retire_after",
  backfillStreams: "backfill_streams",
  backfillEvents: "backfill_events",
  fingerprint: "fingerprint",
  handoverOwner: "handover_owner",
  handoverUntil: "handover_until",
  handoverFrom: "handover_from",
  handoverGraceSeconds: "handover_grace_seconds",
  replayStartedAt: "replay_started_at"
} as const

/** `wh_perspective_backfill`, a version's history still to plan (migration 0005). @internal */
export const PerspectiveBackfill = {
  table: "wh_perspective_backfill",
  perspectiveName: "perspective_name",
  streamId: "stream_id",
  throughEventId: "through_event_id"
} as const

/**
 * The columns of every perspective's own table (`wh_per_<base>__v<N>`, `PerspectiveTable.ofVersion`; made by
 * `perspectiveRows.createTable`). The table's name depends on the perspective, so there is no `table` here.
 *
 * @internal
 */
export const PerspectiveRows = {
  id: "id",
  data: "data",
  metadata: "metadata",
  scope: "scope",
  createdAt: "created_at",
  updatedAt: "updated_at",
  version: "version"
} as const

/**
 * `wh_migrations`, the migrator's bookkeeping in each service schema. Not a migration's table: `PgMigrator` creates
 * it (`sql/migrations.ts`, whose CREATE TABLE is written from these names). @internal
 */
export const Migrations = {
  table: "wh_migrations",
  idx: "idx",
  tag: "tag",
  hash: "hash",
  appliedAt: "applied_at"
} as const

/**
 * `wh_tenants`, the tenant catalog in its own schema (`PgTenants`). Not a migration's table: the first tenant added
 * creates it (`sql/tenants.ts`, whose CREATE TABLE is written from these names). @internal
 */
export const TenantsCatalog = {
  table: "wh_tenants",
  tenantId: "tenant_id",
  schemaName: "schema_name",
  state: "state",
  createdAt: "created_at",
  migratedAt: "migrated_at"
} as const
