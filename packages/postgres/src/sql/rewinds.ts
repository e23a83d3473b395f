/**
 * Rewinds of cursors flagged RewindRequired (status 32): which flagged cursors are due, the start-up scan, the
 * trigger, the cursor's completion (`@whizbang/stream-locker`'s rewinder), and the operator's flagging of whole
 * perspectives (`whizbang rewind`: database-level only, the worker's rewind machinery acts on the flags).
 */
import { Schema } from "effect"
import { Events as e, PerspectiveCursors as c } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

const Pair = Schema.Struct({ streamId: Schema.String, perspectiveName: Schema.String })
const pairKeys = { streamId: c.streamId, perspectiveName: c.perspectiveName } as const

/**
 * The flagged cursors among the given pairs, each with whether its debounce has elapsed: no late arrival for
 * `windowMillis` (sliding window) or flagged for `capMillis` (cap), on the database clock. `force` ignores the
 * debounce. The pairs are parallel arrays.
 *
 * @category operations
 * @since 0.5.0
 */
export const flagged = Operation.findAll({
  name: "rewinds.flagged",
  Row: Schema.Struct({ ...Pair.fields, due: Schema.Boolean }),
  columns: pairKeys,
  params: (r: {
    readonly streamIds: ReadonlyArray<string>
    readonly perspectiveNames: ReadonlyArray<string>
    readonly windowMillis: number
    readonly capMillis: number
    readonly force: boolean
  }) => [r.streamIds, r.perspectiveNames, r.windowMillis, r.capMillis, r.force],
  sql: `
SELECT c.${c.streamId}, c.${c.perspectiveName},
       ($5::boolean
         OR c.${c.rewindFlaggedAt} IS NULL
         OR c.${c.rewindFlaggedAt} <= now() - $3::double precision * interval '1 millisecond'
         OR c.${c.rewindFirstFlaggedAt} <= now() - $4::double precision * interval '1 millisecond') AS due
FROM ${c.table} c
JOIN (SELECT DISTINCT * FROM unnest($1::uuid[], $2::text[]) AS t(${c.streamId}, ${c.perspectiveName})) t
  ON t.${c.streamId} = c.${c.streamId} AND t.${c.perspectiveName} = c.${c.perspectiveName}
WHERE c.${c.status} & 32 = 32`
})

/**
 * Every flagged cursor of the given perspectives (the start-up scan).
 *
 * @category operations
 * @since 0.5.0
 */
export const scanFlagged = Operation.findAll({
  name: "rewinds.scanFlagged",
  Row: Pair,
  columns: pairKeys,
  params: (r: { readonly perspectiveNames: ReadonlyArray<string> }) => [r.perspectiveNames],
  sql: `
SELECT ${c.streamId}, ${c.perspectiveName} FROM ${c.table}
WHERE ${c.status} & 32 = 32 AND ${c.perspectiveName} = ANY($1::text[])
ORDER BY ${c.rewindFirstFlaggedAt} NULLS FIRST, ${c.streamId}`
})

/**
 * The trigger of a flagged cursor; none when the cursor is not flagged (another instance finished it).
 *
 * @category operations
 * @since 0.5.0
 */
export const trigger = Operation.findOne({
  name: "rewinds.trigger",
  Row: Schema.Struct({ triggerId: Schema.NullOr(Schema.String) }),
  columns: { triggerId: "trigger_id" },
  params: (r: { readonly streamId: string; readonly perspectiveName: string }) => [r.streamId, r.perspectiveName],
  sql: `
SELECT ${c.rewindTriggerEventId} AS trigger_id FROM ${c.table}
WHERE ${c.streamId} = $1::uuid AND ${c.perspectiveName} = $2::text AND ${c.status} & 32 = 32`
})

/**
 * Moves the cursor to the last replayed event, clears RewindRequired (and Processing/CatchingUp/Failed), the
 * trigger and the flag timestamps. `lastEventId` null keeps the position.
 *
 * @category operations
 * @since 0.5.0
 */
export const finish = Operation.void({
  name: "rewinds.finish",
  params: (r: { readonly streamId: string; readonly perspectiveName: string; readonly lastEventId: string | null }) => [
    r.streamId,
    r.perspectiveName,
    r.lastEventId
  ],
  sql: `
UPDATE ${c.table}
SET ${c.lastEventId} = coalesce($3::uuid, ${c.lastEventId}),
    ${c.status} = (${c.status} & ~(32 | 8 | 4 | 1)) | 2,
    ${c.error} = NULL,
    ${c.processedAt} = now(),
    ${c.rewindTriggerEventId} = NULL,
    ${c.rewindFirstFlaggedAt} = NULL,
    ${c.rewindFlaggedAt} = NULL
WHERE ${c.streamId} = $1::uuid AND ${c.perspectiveName} = $2::text`
})

/**
 * Flags cursors RewindRequired with the stream's first event (version 1) as the trigger. Returns how many it
 * flagged.
 *
 * @category operations
 * @since 0.5.0
 */
export const flag = Operation.count({
  name: "rewinds.flag",
  params: (r: { readonly perspectiveName: string; readonly streamIds: ReadonlyArray<string> }) => [r.perspectiveName, r.streamIds],
  sql: `
UPDATE ${c.table} c
SET ${c.status} = c.${c.status} | 32,
    ${c.rewindTriggerEventId} = (SELECT e.${e.eventId} FROM ${e.table} e WHERE e.${e.streamId} = c.${c.streamId} ORDER BY e.${e.streamVersion} LIMIT 1),
    ${c.rewindFlaggedAt} = now(),
    ${c.rewindFirstFlaggedAt} = coalesce(c.${c.rewindFirstFlaggedAt}, k.at)
FROM (SELECT now() AS at) k -- Citus refuses now() inside COALESCE in a modification
WHERE c.${c.perspectiveName} = $1::text AND c.${c.streamId} = ANY($2::uuid[])
RETURNING c.${c.streamId}, c.${c.rewindTriggerEventId}`
})

/**
 * How many cursors the perspective has.
 *
 * @category operations
 * @since 0.5.0
 */
export const countCursors = Operation.single({
  name: "rewinds.countCursors",
  Row: Schema.Struct({ n: Schema.Number }),
  params: (r: { readonly perspectiveName: string }) => [r.perspectiveName],
  sql: `SELECT count(*)::int AS n FROM ${c.table} WHERE ${c.perspectiveName} = $1::text`
})

/**
 * Keyset page of a perspective's cursor streams: the first `limit` after `after`, in order.
 *
 * @category operations
 * @since 0.5.0
 */
export const cursorStreams = Operation.findAll({
  name: "rewinds.cursorStreams",
  Row: Schema.Struct({ streamId: Schema.String }),
  columns: { streamId: c.streamId },
  params: (r: { readonly perspectiveName: string; readonly after: string; readonly limit: number }) => [
    r.perspectiveName,
    r.after,
    r.limit
  ],
  sql: `
SELECT ${c.streamId} FROM ${c.table}
WHERE ${c.perspectiveName} = $1::text AND ${c.streamId} > $2::uuid ORDER BY ${c.streamId} LIMIT $3::int`
})
