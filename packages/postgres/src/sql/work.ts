/**
 * Pending work by perspective, and its removal (`whizbang work list` and `work remove`). Work filed under a name no
 * release runs (enqueued under a misspelled name, or of a perspective removed from the code) waits forever.
 */
import { Schema } from "effect"
import { PerspectiveBackfill as b, PerspectiveEvents as w, PerspectiveVersions as v, ServiceInstances as i } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"
import { State } from "./registry.js"

/**
 * One perspective's pending work, its registry state (null: not registered) and its live runners.
 *
 * @category models
 * @since 0.5.0
 */
export const PerspectiveWork = Schema.Struct({
  perspectiveName: Schema.String,
  pending: Schema.Number,
  streams: Schema.Number,
  oldest: Schema.NullOr(Schema.Date),
  oldestAgeSeconds: Schema.NullOr(Schema.Number),
  state: Schema.NullOr(State),
  runners: Schema.Number
})

const perspectiveWorkColumns = { perspectiveName: w.perspectiveName, oldestAgeSeconds: "oldest_age_seconds", state: v.state } as const

const listing = (state: string, join: string) => `
SELECT w.${w.perspectiveName}, w.pending, w.streams, w.oldest,
       extract(epoch FROM now() - w.oldest)::float8 AS oldest_age_seconds,
       ${state} AS ${v.state},
       (SELECT count(*)::int FROM ${i.table} i
        WHERE i.${i.lastHeartbeatAt} > now() - make_interval(secs => $1::float8)
          AND (i.${i.perspectiveNames} IS NULL OR w.${w.perspectiveName} = ANY(i.${i.perspectiveNames}))) AS runners
FROM (
  SELECT ${w.perspectiveName}, count(*)::int AS pending, count(DISTINCT ${w.streamId})::int AS streams, min(${w.createdAt}) AS oldest
  FROM ${w.table} WHERE ${w.processedAt} IS NULL AND ($2::text IS NULL OR ${w.perspectiveName} = $2::text)
  GROUP BY ${w.perspectiveName}
) w ${join}
ORDER BY w.${w.perspectiveName}`

interface ListRequest {
  /** A heartbeat older than this means the instance runs nothing. */
  readonly deadInstanceAfterSeconds: number
  /** Null: every perspective. */
  readonly perspectiveName: string | null
}

const listParams = (r: ListRequest) => [r.deadInstanceAfterSeconds, r.perspectiveName]

/**
 * Per perspective with pending work: its pending rows, their streams, the oldest, its registry state and the live
 * instances that run it (an instance with no recorded perspective set runs every one).
 *
 * @category operations
 * @since 0.5.0
 */
export const list = Operation.findAll({
  name: "work.list",
  Row: PerspectiveWork,
  columns: perspectiveWorkColumns,
  params: listParams,
  sql: listing(`v.${v.state}`, `LEFT JOIN ${v.table} v ON v.${v.perspectiveName} = w.${w.perspectiveName}`)
})

/**
 * {@link list} on a schema without the versions registry (migrated before 0005): every state null.
 *
 * @category operations
 * @since 0.5.0
 */
export const listWithoutRegistry = Operation.findAll({
  name: "work.listWithoutRegistry",
  Row: PerspectiveWork,
  columns: perspectiveWorkColumns,
  params: listParams,
  sql: listing("NULL::text", "")
})

/**
 * Row-locks the perspective's registry row, if any, so it cannot be registered while its work is removed.
 *
 * @category operations
 * @since 0.5.0
 */
export const lockRegistered = Operation.void({
  name: "work.lockRegistered",
  params: (r: { readonly perspectiveName: string }) => [r.perspectiveName],
  sql: `SELECT ${v.state} FROM ${v.table} WHERE ${v.perspectiveName} = $1::text FOR UPDATE`
})

/**
 * Removes every work row of the perspective (pending, or kept as processed in debug mode). Returns the pending
 * rows and streams removed.
 *
 * @category operations
 * @since 0.5.0
 */
export const remove = Operation.single({
  name: "work.remove",
  Row: Schema.Struct({ pending: Schema.Number, streams: Schema.Number }),
  params: (r: { readonly perspectiveName: string }) => [r.perspectiveName],
  sql: `
WITH work AS (
  DELETE FROM ${w.table} WHERE ${w.perspectiveName} = $1::text RETURNING ${w.streamId}, ${w.processedAt}
)
SELECT count(*) FILTER (WHERE ${w.processedAt} IS NULL)::int AS pending,
       count(DISTINCT ${w.streamId}) FILTER (WHERE ${w.processedAt} IS NULL)::int AS streams
FROM work`
})

/**
 * Removes the history planned for the perspective (a version registered, then removed from the code). Returns how
 * many streams' history it removed.
 *
 * @category operations
 * @since 0.5.0
 */
export const removePlanned = Operation.count({
  name: "work.removePlanned",
  params: (r: { readonly perspectiveName: string }) => [r.perspectiveName],
  sql: `DELETE FROM ${b.table} WHERE ${b.perspectiveName} = $1::text RETURNING 1`
})

/**
 * Wakes the workers of this schema: `NOTIFY wh_work` with the schema's name, delivered when the caller's transaction
 * commits. An operator's command that gives the workers something to do (a rebuild's planned history or work rows,
 * a dead letter retried, a stream lock released) sends it: a tenant's workers are started by that notification
 * alone (a fleet never polls an idle tenant), and a single schema's workers claim at once instead of at their next
 * poll.
 *
 * @category operations
 * @since 0.8.0
 */
export const wake = Operation.void({
  name: "work.wake",
  sql: "SELECT pg_notify('wh_work', current_schema())"
})
