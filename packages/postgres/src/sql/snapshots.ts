/**
 * `wh_perspective_snapshots` statements: a perspective's encoded model for a stream as of one event, the starting
 * point of a rewind. Written set-based (one insert, one prune for any number of pairs).
 */
import { Schema } from "effect"
import { PerspectiveSnapshots as s } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

interface Pair {
  readonly streamId: string
  readonly perspectiveName: string
}

/**
 * Writes snapshots (parallel arrays). Re-writing a snapshot of the same event replaces it (a rewind recomputes them).
 *
 * @category operations
 * @since 0.5.0
 */
export const insertSnapshots = Operation.void({
  name: "snapshots.insertSnapshots",
  params: (r: {
    readonly streamIds: ReadonlyArray<string>
    readonly perspectiveNames: ReadonlyArray<string>
    readonly eventIds: ReadonlyArray<string>
    readonly data: ReadonlyArray<string>
  }) => [r.streamIds, r.perspectiveNames, r.eventIds, r.data],
  sql: `
INSERT INTO ${s.table} AS s (${s.streamId}, ${s.perspectiveName}, ${s.eventId}, ${s.data})
SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::jsonb[])
ON CONFLICT (${s.streamId}, ${s.perspectiveName}, ${s.eventId}) DO UPDATE SET ${s.data} = excluded.${s.data}, ${s.createdAt} = excluded.${s.createdAt}`
})

/**
 * Keeps the newest `keep` snapshots (by event id) of each pair (parallel arrays).
 *
 * @category operations
 * @since 0.5.0
 */
export const pruneSnapshots = Operation.void({
  name: "snapshots.pruneSnapshots",
  params: (r: { readonly streamIds: ReadonlyArray<string>; readonly perspectiveNames: ReadonlyArray<string>; readonly keep: number }) => [
    r.streamIds,
    r.perspectiveNames,
    r.keep
  ],
  sql: `
DELETE FROM ${s.table} s
USING (
  SELECT x.${s.streamId}, x.${s.perspectiveName}, x.${s.eventId},
         row_number() OVER (PARTITION BY x.${s.streamId}, x.${s.perspectiveName} ORDER BY x.${s.eventId} DESC) AS rank
  FROM ${s.table} x
  JOIN (SELECT DISTINCT * FROM unnest($1::uuid[], $2::text[]) AS p(stream_id, perspective_name)) p
    ON p.stream_id = x.${s.streamId} AND p.perspective_name = x.${s.perspectiveName}
) r
WHERE s.${s.streamId} = r.${s.streamId} AND s.${s.perspectiveName} = r.${s.perspectiveName} AND s.${s.eventId} = r.${s.eventId} AND r.rank > $3::int`
})

const Snapshot = Schema.Struct({
  eventId: Schema.String,
  // jsonb: the perspective's encoded model, decoded by its model schema.
  data: Schema.Unknown
})

/**
 * The newest snapshot of a pair strictly before an event.
 *
 * @category operations
 * @since 0.5.0
 */
export const latestBefore = Operation.findOne({
  name: "snapshots.latestBefore",
  Row: Snapshot,
  columns: { eventId: s.eventId, data: s.data },
  params: (r: Pair & { readonly eventId: string }) => [r.streamId, r.perspectiveName, r.eventId],
  sql: `
SELECT ${s.eventId}, ${s.data} FROM ${s.table}
WHERE ${s.streamId} = $1::uuid AND ${s.perspectiveName} = $2::text AND ${s.eventId} < $3::uuid
ORDER BY ${s.eventId} DESC LIMIT 1`
})

/**
 * Drops the snapshots a rewind invalidates (at or after the trigger).
 *
 * @category operations
 * @since 0.5.0
 */
export const deleteFrom = Operation.void({
  name: "snapshots.deleteFrom",
  params: (r: Pair & { readonly eventId: string }) => [r.streamId, r.perspectiveName, r.eventId],
  sql: `
DELETE FROM ${s.table} WHERE ${s.streamId} = $1::uuid AND ${s.perspectiveName} = $2::text AND ${s.eventId} >= $3::uuid`
})

/**
 * Every snapshot of a pair, oldest first.
 *
 * @category operations
 * @since 0.5.0
 */
export const list = Operation.findAll({
  name: "snapshots.list",
  Row: Snapshot,
  columns: { eventId: s.eventId, data: s.data },
  params: (r: Pair) => [r.streamId, r.perspectiveName],
  sql: `
SELECT ${s.eventId}, ${s.data}, ${s.createdAt} FROM ${s.table}
WHERE ${s.streamId} = $1::uuid AND ${s.perspectiveName} = $2::text ORDER BY ${s.eventId}`
})

/**
 * Drops every snapshot of a pair (purge).
 *
 * @category operations
 * @since 0.5.0
 */
export const deleteAll = Operation.void({
  name: "snapshots.deleteAll",
  params: (r: Pair) => [r.streamId, r.perspectiveName],
  sql: `DELETE FROM ${s.table} WHERE ${s.streamId} = $1::uuid AND ${s.perspectiveName} = $2::text`
})
