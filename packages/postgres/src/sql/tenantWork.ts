/**
 * Whether a tenant schema has anything for a worker (the tenant fleet's check before it starts a tenant's services,
 * and while it holds them): pending work, lifecycle stages, version work (a version being built, a hand-over abandoned,
 * a retirement due, history planned); its lag; whether another process's live instance runs its work already, and
 * whether any other instance has a row; and which of its queue tables have stale planner statistics. One statement
 * on the tenant's view of the client, prepared (the fleet runs it for every tenant it is notified of). What it found
 * before a start is handed to the start (`TenantStart`).
 */
import { Schema } from "effect"
import {
  LifecyclePending as l,
  PerspectiveBackfill as b,
  PerspectiveEvents as w,
  PerspectiveVersions as v,
  ServiceInstances as i
} from "../internal/columns.js"
import * as Operation from "../internal/operation.js"
import { staleTables } from "./queueVacuum.js"

/**
 * A tenant's work, as the fleet sees it.
 *
 * @category models
 * @since 0.6.0
 */
export const Work = Schema.Struct({
  /**
   * Work rows, lifecycle stages waiting, or version work (`versionWork`: a new perspective's catch-up goes live at
   * once; its history is replayed from `wh_perspective_backfill`, not from work rows).
   */
  busy: Schema.Boolean,
  /**
   * A version building, an abandoned hand-over waiting in `ready`, a version due for retirement, or history planned
   * (`TenantStart.Facts.versionWork`; counted in `busy`).
   *
   * @since 0.8.0
   */
  versionWork: Schema.Boolean,
  /** Seconds since its oldest pending work row was enqueued; 0 when none. */
  lagSeconds: Schema.Number,
  /** Another instance than the one asking, whose heartbeat is younger than the stale threshold, is registered. */
  elsewhere: Schema.Boolean,
  /**
   * A row of another instance than the one asking, live or not, is in the registry (`TenantStart.Facts.otherInstances`).
   *
   * @since 0.8.0
   */
  others: Schema.Boolean,
  /**
   * The queue tables whose planner statistics are stale (`queueVacuum.staleTables`: changed by more than 1,000 rows
   * plus a fifth of their estimated size since their last analyze): a claim planned on them can run for seconds (a backlog's first claim over 200,000 fresh work rows: 1.8 s, 13 ms after an ANALYZE).
   *
   * @since 0.8.0
   */
  staleTables: Schema.Array(Schema.String)
})

/**
 * @category models
 * @since 0.6.0
 */
export interface Request {
  /** The instance asking (every tenant's services of its process register it). */
  readonly instanceId: string
  /** An instance silent for longer is taken as gone (`abandonStaleInstanceThreshold`). */
  readonly staleSeconds: number
}

/**
 * The tenant's work (run on the tenant's view of the client, `PgClient.forSchema`).
 *
 * @category operations
 * @since 0.6.0
 */
export const check = Operation.single({
  name: "tenantWork.check",
  Row: Work,
  columns: { versionWork: "version_work", lagSeconds: "lag_seconds", staleTables: "stale_tables" },
  params: (r: Request) => [r.instanceId, r.staleSeconds],
  prepared: true,
  sql: `WITH version_work AS (
  SELECT EXISTS (
    SELECT 1 FROM ${v.table}
    WHERE ${v.state} = 'building'
      OR (${v.state} = 'ready' AND (${v.handoverUntil} IS NULL OR ${v.handoverUntil} <= now()))
      OR (${v.state} = 'retiring' AND ${v.retireAfter} <= now())
  ) OR EXISTS (SELECT 1 FROM ${b.table}) AS found
)
SELECT EXISTS (SELECT 1 FROM ${w.table})
  OR EXISTS (SELECT 1 FROM ${l.table})
  OR (SELECT found FROM version_work) AS busy,
  (SELECT found FROM version_work) AS version_work,
  coalesce(extract(epoch FROM now() - (SELECT min(${w.createdAt}) FROM ${w.table})), 0)::float8 AS lag_seconds,
  EXISTS (SELECT 1 FROM ${i.table} WHERE ${i.instanceId} <> $1::uuid
    AND ${i.lastHeartbeatAt} > now() - make_interval(secs => $2::int)) AS elsewhere,
  EXISTS (SELECT 1 FROM ${i.table} WHERE ${i.instanceId} <> $1::uuid) AS others,
  ${staleTables} AS stale_tables`
})
