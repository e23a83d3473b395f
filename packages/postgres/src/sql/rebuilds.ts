/**
 * The operator's in-place rebuild of a perspective version (`whizbang rebuild`): database-level only. It deletes
 * the version's rows, cursors, snapshots and pending work of a batch of streams, and plans their history for the
 * replay ({@link planHistory}) or re-enqueues work the ordinary pipeline applies ({@link enqueueEvents}). `table` is a version's own table (`PerspectiveTable.ofVersion`), quoted here.
 */
import { Schema } from "effect"
import * as Identifier from "../internal/identifier.js"
import {
  ActiveStreams as a,
  Events as e,
  PerspectiveCursors as c,
  PerspectiveBackfill,
  PerspectiveEvents as w,
  PerspectiveRows as m,
  PerspectiveSnapshots as s,
  PerspectiveVersions
} from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * A perspective version and the event types it re-enqueues.
 *
 * @category models
 * @since 0.5.0
 */
export interface Target {
  readonly perspectiveName: string
  readonly eventTypes: ReadonlyArray<string>
}

/**
 * A perspective version and a batch of its streams.
 *
 * @category models
 * @since 0.5.0
 */
export interface Batch {
  readonly perspectiveName: string
  readonly streamIds: ReadonlyArray<string>
}

const Count = Schema.Struct({ n: Schema.Number })
const Present = Schema.Struct({ present: Schema.Boolean })

// The streams a rebuild touches: those with a cursor or an event of a handled type ($1 perspective, $2 types).
const rebuildStreamIds = `
  SELECT ${c.streamId} FROM ${c.table} WHERE ${c.perspectiveName} = $1::text
  UNION SELECT ${e.streamId} FROM ${e.table} WHERE ${e.eventType} = ANY($2::text[])`

/**
 * How many streams a rebuild touches: those with a cursor or an event of a handled type.
 *
 * @category operations
 * @since 0.5.0
 */
export const countStreams = Operation.single({
  name: "rebuilds.countStreams",
  Row: Count,
  params: (r: Target) => [r.perspectiveName, r.eventTypes],
  sql: `
SELECT count(*)::int AS n FROM (${rebuildStreamIds}
) s`
})

/**
 * Keyset page of {@link countStreams}'s streams: the first `limit` after `after`, in order.
 *
 * @category operations
 * @since 0.5.0
 */
export const streams = Operation.findAll({
  name: "rebuilds.streams",
  Row: Schema.Struct({ streamId: Schema.String }),
  columns: { streamId: c.streamId },
  params: (r: Target & { readonly after: string; readonly limit: number }) => [r.perspectiveName, r.eventTypes, r.after, r.limit],
  sql: `
SELECT ${c.streamId} FROM (${rebuildStreamIds}
) s WHERE ${c.streamId} > $3::uuid ORDER BY ${c.streamId} LIMIT $4::int`
})

/**
 * What a rebuild resets and re-enqueues, counted before it runs: the streams (those of {@link countStreams}), the
 * events of the types and the pending work rows. `streamId` null: every stream.
 *
 * @category operations
 * @since 0.5.0
 */
export const counts = Operation.single({
  name: "rebuilds.counts",
  Row: Schema.Struct({ streams: Schema.Number, events: Schema.Number, pending: Schema.Number }),
  params: (r: Target & { readonly streamId: string | null }) => [r.perspectiveName, r.eventTypes, r.streamId],
  sql: `
WITH streams AS (
  SELECT ${c.streamId} FROM ${c.table} WHERE ${c.perspectiveName} = $1::text AND ($3::uuid IS NULL OR ${c.streamId} = $3::uuid)
  UNION SELECT ${e.streamId} FROM ${e.table} WHERE ${e.eventType} = ANY($2::text[]) AND ($3::uuid IS NULL OR ${e.streamId} = $3::uuid)
)
SELECT (SELECT count(*) FROM streams)::int AS streams,
       (SELECT count(*) FROM ${e.table} WHERE ${e.eventType} = ANY($2::text[]) AND ($3::uuid IS NULL OR ${e.streamId} = $3::uuid))::int AS events,
       (SELECT count(*) FROM ${w.table}
        WHERE ${w.perspectiveName} = $1::text AND ${w.processedAt} IS NULL AND ($3::uuid IS NULL OR ${w.streamId} = $3::uuid))::int AS pending`
})

/**
 * The read-model rows a rebuild empties: those of the streams it resets (a row whose stream has neither a cursor
 * nor an event of the types stays). Request as {@link counts}, and the version's own table.
 *
 * @category operations
 * @since 0.5.0
 */
export const countModels = Operation.single({
  name: "rebuilds.countModels",
  Row: Count,
  params: (r: Target & { readonly streamId: string | null; readonly table: string }) => [r.perspectiveName, r.eventTypes, r.streamId],
  sql: (r) => `
SELECT count(*)::int AS n FROM ${Identifier.quote(r.table)} m
WHERE CASE WHEN $3::uuid IS NULL
  THEN EXISTS (SELECT 1 FROM ${c.table} c WHERE c.${c.perspectiveName} = $1::text AND c.${c.streamId} = m.${m.id})
    OR EXISTS (SELECT 1 FROM ${e.table} e WHERE e.${e.streamId} = m.${m.id} AND e.${e.eventType} = ANY($2::text[]))
  ELSE m.${m.id} = $3::uuid END`
})

/**
 * Revokes the streams' leases first: an instance applying them right now then fails its completion's fencing
 * and rolls back, so nothing it computed from the old model lands after the rebuild.
 *
 * @category operations
 * @since 0.5.0
 */
export const revokeLeases = Operation.void({
  name: "rebuilds.revokeLeases",
  params: (r: { readonly streamIds: ReadonlyArray<string> }) => [r.streamIds],
  sql: `DELETE FROM ${a.table} WHERE ${a.streamId} = ANY($1::uuid[])`
})

/**
 * Whether the table exists (a table or a view).
 *
 * @category operations
 * @since 0.5.0
 */
export const tableExists = Operation.single({
  name: "rebuilds.tableExists",
  Row: Present,
  params: (r: { readonly table: string }) => [r.table],
  sql: `SELECT to_regclass(quote_ident($1::text)) IS NOT NULL AS present`
})

/**
 * Whether the table exists as a table (not a view).
 *
 * @category operations
 * @since 0.5.0
 */
export const baseTableExists = Operation.single({
  name: "rebuilds.baseTableExists",
  Row: Present,
  params: (r: { readonly table: string }) => [r.table],
  sql: `SELECT coalesce((SELECT c.relkind IN ('r', 'p') FROM pg_class c WHERE c.oid = to_regclass(quote_ident($1::text))), false) AS present`
})

/**
 * Deletes the streams' rows of the version's own table.
 *
 * @category operations
 * @since 0.5.0
 */
export const deleteModels = Operation.void({
  name: "rebuilds.deleteModels",
  params: (r: { readonly table: string; readonly streamIds: ReadonlyArray<string> }) => [r.streamIds],
  sql: (r) => `DELETE FROM ${Identifier.quote(r.table)} WHERE ${m.id} = ANY($1::uuid[])`
})

/**
 * @category operations
 * @since 0.5.0
 */
export const deleteCursors = Operation.void({
  name: "rebuilds.deleteCursors",
  params: (r: Batch) => [r.perspectiveName, r.streamIds],
  sql: `DELETE FROM ${c.table} WHERE ${c.perspectiveName} = $1::text AND ${c.streamId} = ANY($2::uuid[])`
})

/**
 * @category operations
 * @since 0.5.0
 */
export const deleteSnapshots = Operation.void({
  name: "rebuilds.deleteSnapshots",
  params: (r: Batch) => [r.perspectiveName, r.streamIds],
  sql: `DELETE FROM ${s.table} WHERE ${s.perspectiveName} = $1::text AND ${s.streamId} = ANY($2::uuid[])`
})

/**
 * @category operations
 * @since 0.5.0
 */
export const deletePendingWork = Operation.void({
  name: "rebuilds.deletePendingWork",
  params: (r: Batch) => [r.perspectiveName, r.streamIds],
  sql: `DELETE FROM ${w.table} WHERE ${w.perspectiveName} = $1::text AND ${w.streamId} = ANY($2::uuid[])`
})

/**
 * Enqueues a work row for every event of the types on the streams. `partitionCount` must match the workers'.
 * Returns how many it enqueued.
 *
 * @category operations
 * @since 0.5.0
 */
export const enqueueEvents = Operation.count({
  name: "rebuilds.enqueueEvents",
  params: (r: Batch & { readonly eventTypes: ReadonlyArray<string>; readonly partitionCount: number }) => [
    r.perspectiveName,
    r.streamIds,
    r.eventTypes,
    r.partitionCount
  ],
  sql: `
INSERT INTO ${w.table} (${w.workId}, ${w.streamId}, ${w.perspectiveName}, ${w.eventId}, ${w.partitionNumber})
SELECT gen_random_uuid(), e.${e.streamId}, $1::text, e.${e.eventId}, abs(hashtext(e.${e.streamId}::text)) % $4::int
FROM ${e.table} e WHERE e.${e.streamId} = ANY($2::uuid[]) AND e.${e.eventType} = ANY($3::text[])
RETURNING ${w.workId}`
})

const v = PerspectiveVersions
const b = PerspectiveBackfill

/**
 * Plans the streams' history for the replay of the instances that run the perspective (`PgHistoryReplay`) instead of
 * enqueuing work: per stream with events of the types, its newest such event (every later one is routed to the
 * perspective by its append; the replay removes the work of any event it covers), and adds them to the version's
 * history as planned (`backfill_streams`, `backfill_events`: the replay's progress). Returns the events planned.
 *
 * @category operations
 * @since 0.5.0
 */
export const planHistory = Operation.single({
  name: "rebuilds.planHistory",
  Row: Schema.Struct({ events: Schema.Number }),
  params: (r: Batch & { readonly eventTypes: ReadonlyArray<string> }) => [r.perspectiveName, r.streamIds, r.eventTypes],
  sql: `
WITH planned AS (
  INSERT INTO ${b.table} (${b.perspectiveName}, ${b.streamId}, ${b.throughEventId})
  SELECT DISTINCT ON (e.${e.streamId}) $1::text, e.${e.streamId}, e.${e.eventId}
  FROM ${e.table} e WHERE e.${e.streamId} = ANY($2::uuid[]) AND e.${e.eventType} = ANY($3::text[])
  ORDER BY e.${e.streamId}, e.${e.eventId} DESC
  ON CONFLICT (${b.perspectiveName}, ${b.streamId}) DO UPDATE SET ${b.throughEventId} = excluded.${b.throughEventId}
  RETURNING 1
),
counted AS (SELECT count(*) AS n FROM ${e.table} e WHERE e.${e.streamId} = ANY($2::uuid[]) AND e.${e.eventType} = ANY($3::text[])),
counts AS (
  UPDATE ${v.table}
  SET ${v.backfillStreams} = ${v.backfillStreams} + (SELECT count(*) FROM planned),
      ${v.backfillEvents} = ${v.backfillEvents} + (SELECT n FROM counted)
  WHERE ${v.perspectiveName} = $1::text
  RETURNING 1
)
SELECT (SELECT n FROM counted)::int AS events`
})

/**
 * Starts a rebuild's history afresh when nothing of the version is planned any more: its planned counts, and the
 * replay's start (`replay_started_at`, migration 0018, not in the column registry: its table is checked against
 * migration 0005's CREATE TABLE).
 *
 * @category operations
 * @since 0.5.0
 */
export const resetHistory = Operation.void({
  name: "rebuilds.resetHistory",
  params: (r: { readonly perspectiveName: string }) => [r.perspectiveName],
  sql: `
UPDATE ${v.table} SET ${v.backfillStreams} = 0, ${v.backfillEvents} = 0, replay_started_at = NULL
WHERE ${v.perspectiveName} = $1::text AND NOT EXISTS (SELECT 1 FROM ${b.table} x WHERE x.${b.perspectiveName} = $1::text)`
})
