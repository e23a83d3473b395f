/**
 * The operator's dead-letter statements (`whizbang dead-letters`): list, show, retry (back into the work queue)
 * and discard. Every value is a bound parameter.
 */
import { Schema } from "effect"
import { DeadLetters as d, LifecyclePending as l, PerspectiveEvents as w } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

const letterFields = {
  id: Schema.String,
  perspectiveName: Schema.String,
  streamId: Schema.String,
  eventId: Schema.String,
  eventType: Schema.String,
  attempts: Schema.Number,
  error: Schema.String,
  createdAt: Schema.Date
}

const letterKeys = {
  id: d.id,
  perspectiveName: d.perspectiveName,
  streamId: d.streamId,
  eventId: d.eventId,
  eventType: d.eventType,
  attempts: d.attempts,
  error: d.error,
  createdAt: d.createdAt
} as const

/**
 * A dead letter as listed.
 *
 * @category models
 * @since 0.5.0
 */
export const Letter = Schema.Struct(letterFields)

/**
 * A dead letter with its work id and payload.
 *
 * @category models
 * @since 0.5.0
 */
export const Detail = Schema.Struct({ ...letterFields, workId: Schema.String, payload: Schema.Unknown })

const detailColumns = { ...letterKeys, workId: d.workId, payload: d.payload } as const

/**
 * Oldest first; `perspectiveName` null: every perspective.
 *
 * @category operations
 * @since 0.5.0
 */
export const list = Operation.findAll({
  name: "deadLetters.list",
  Row: Letter,
  columns: letterKeys,
  params: (r: { readonly perspectiveName: string | null; readonly limit: number }) => [r.perspectiveName, r.limit],
  sql: `
SELECT ${d.id}, ${d.perspectiveName}, ${d.streamId}, ${d.eventId}, ${d.eventType}, ${d.attempts}, ${d.error}, ${d.createdAt}
FROM ${d.table} WHERE ($1::text IS NULL OR ${d.perspectiveName} = $1::text)
ORDER BY ${d.createdAt}, ${d.id} LIMIT $2::int`
})

/**
 * One dead letter with its payload.
 *
 * @category operations
 * @since 0.5.0
 */
export const show = Operation.findOne({
  name: "deadLetters.show",
  Row: Detail,
  columns: detailColumns,
  params: (r: { readonly id: string }) => [r.id],
  sql: `
SELECT ${d.id}, ${d.workId}, ${d.perspectiveName}, ${d.streamId}, ${d.eventId}, ${d.eventType}, ${d.attempts}, ${d.error}, ${d.payload}, ${d.createdAt}
FROM ${d.table} WHERE ${d.id} = $1::uuid`
})

/**
 * Matches (as `l`) the event's lifecycle row parked after its `DeadLettered` stage fired (`claimed_at =
 * 'infinity'`, see `wh_lifecycle_pending`) when the deleted `letter` was the event's last dead letter. The
 * statement's snapshot still sees the letter, so it is excluded by id ($1).
 */
const parkedOfLastLetter = `l.${l.eventId} = letter.${d.eventId} AND l.${l.claimedAt} = 'infinity'
    AND NOT EXISTS (
      SELECT 1 FROM ${d.table} d WHERE d.${d.streamId} = letter.${d.streamId} AND d.${d.eventId} = letter.${d.eventId} AND d.${d.id} <> $1::uuid
    )`

/**
 * Moves a dead letter back into the work queue as a fresh row (attempts 0, no backoff) and deletes the letter,
 * in one statement. A work row already pending for the same (stream, perspective, event) is reset instead. When
 * it was the event's last dead letter, the event's parked lifecycle is released: once every perspective has
 * applied the event, `PostAllPerspectives` / `PostLifecycle` fire. `partitionCount` must match the workers'.
 * Returns the work row, none when the letter does not exist.
 *
 * @category operations
 * @since 0.5.0
 */
export const retry = Operation.findOne({
  name: "deadLetters.retry",
  Row: Schema.Struct({
    workId: Schema.String,
    streamId: Schema.String,
    perspectiveName: Schema.String,
    eventId: Schema.String
  }),
  columns: { workId: w.workId, streamId: w.streamId, perspectiveName: w.perspectiveName, eventId: w.eventId },
  params: (r: { readonly id: string; readonly partitionCount: number }) => [r.id, r.partitionCount],
  sql: `
WITH letter AS (
  DELETE FROM ${d.table} WHERE ${d.id} = $1::uuid RETURNING ${d.streamId}, ${d.perspectiveName}, ${d.eventId}
),
released AS (
  UPDATE ${l.table} l SET ${l.claimedAt} = NULL FROM letter WHERE ${parkedOfLastLetter} RETURNING l.${l.eventId}
)
INSERT INTO ${w.table} (${w.workId}, ${w.streamId}, ${w.perspectiveName}, ${w.eventId}, ${w.partitionNumber}, ${w.attempts})
SELECT gen_random_uuid(), ${d.streamId}, ${d.perspectiveName}, ${d.eventId}, abs(hashtext(${d.streamId}::text)) % $2::int, 0 FROM letter
ON CONFLICT (${w.streamId}, ${w.perspectiveName}, ${w.eventId}) DO UPDATE
  SET ${w.attempts} = 0, ${w.error} = NULL, ${w.scheduledFor} = NULL, ${w.instanceId} = NULL, ${w.leaseExpiry} = NULL
RETURNING ${w.workId}, ${w.streamId}, ${w.perspectiveName}, ${w.eventId}`
})

/**
 * Deletes the letter and the event's parked lifecycle: a perspective will never apply the event, so its
 * lifecycle ended in the `DeadLettered` stage for good (a later retry of another of its letters does not fire
 * `PostAllPerspectives`). Returns 1, or 0 when the letter does not exist.
 *
 * @category operations
 * @since 0.5.0
 */
export const discard = Operation.count({
  name: "deadLetters.discard",
  params: (r: { readonly id: string }) => [r.id],
  sql: `
WITH letter AS (
  DELETE FROM ${d.table} WHERE ${d.id} = $1::uuid RETURNING ${d.id}, ${d.streamId}, ${d.eventId}
),
ended AS (
  DELETE FROM ${l.table} l USING letter WHERE l.${l.eventId} = letter.${d.eventId} AND l.${l.claimedAt} = 'infinity' RETURNING l.${l.eventId}
)
SELECT ${d.id} FROM letter`
})
