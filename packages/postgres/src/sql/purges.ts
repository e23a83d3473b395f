/**
 * Purges of one (stream, perspective) (`@whizbang/stream-locker`): its cursor. The model row goes with
 * `replays.deleteModel`, the snapshots with `PgPerspectiveSnapshots.deleteAll`.
 */
import { PerspectiveCursors as c } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

interface Pair {
  readonly streamId: string
  readonly perspectiveName: string
}

/**
 * Deletes the pair's cursor.
 *
 * @category operations
 * @since 0.5.0
 */
export const deleteCursor = Operation.void({
  name: "purges.deleteCursor",
  params: (r: Pair) => [r.streamId, r.perspectiveName],
  sql: `DELETE FROM ${c.table} WHERE ${c.streamId} = $1::uuid AND ${c.perspectiveName} = $2::text`
})

/**
 * Whether the pair has a cursor (a lock needs one): 1 if so, else 0.
 *
 * @category operations
 * @since 0.5.0
 */
export const cursorExists = Operation.count({
  name: "purges.cursorExists",
  params: (r: Pair) => [r.streamId, r.perspectiveName],
  sql: `SELECT 1 AS one FROM ${c.table} WHERE ${c.streamId} = $1::uuid AND ${c.perspectiveName} = $2::text`
})
