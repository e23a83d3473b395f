/**
 * The operator's view of failed cursors (`whizbang failed`).
 */
import { Schema } from "effect"
import { PerspectiveCursors as c, PerspectiveEvents as w } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * A cursor flagged Failed with its error and where it is stopped: the head pending event (none when its work
 * went to dead letters), its attempts and backoff.
 *
 * @category models
 * @since 0.5.0
 */
export const FailedCursor = Schema.Struct({
  streamId: Schema.String,
  perspectiveName: Schema.String,
  lastEventId: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  processedAt: Schema.NullOr(Schema.Date),
  headEventId: Schema.NullOr(Schema.String),
  attempts: Schema.NullOr(Schema.Number),
  scheduledFor: Schema.NullOr(Schema.Date)
})

const failedCursorColumns = {
  streamId: c.streamId,
  perspectiveName: c.perspectiveName,
  lastEventId: c.lastEventId,
  error: c.error,
  processedAt: c.processedAt,
  headEventId: "head_event_id",
  attempts: w.attempts,
  scheduledFor: w.scheduledFor
} as const

/**
 * Failed cursors with their error and the head pending row (attempts, backoff), most recent first;
 * `perspectiveName` null: every perspective.
 *
 * @category operations
 * @since 0.5.0
 */
export const list = Operation.findAll({
  name: "failedCursors.list",
  Row: FailedCursor,
  columns: failedCursorColumns,
  params: (r: { readonly perspectiveName: string | null; readonly limit: number }) => [r.perspectiveName, r.limit],
  sql: `
SELECT c.${c.streamId}, c.${c.perspectiveName}, c.${c.lastEventId}, c.${c.error}, c.${c.processedAt},
       h.${w.eventId} AS head_event_id, h.${w.attempts}, h.${w.scheduledFor}
FROM ${c.table} c
LEFT JOIN LATERAL (
  SELECT pe.${w.eventId}, pe.${w.attempts}, pe.${w.scheduledFor} FROM ${w.table} pe
  WHERE pe.${w.streamId} = c.${c.streamId} AND pe.${w.perspectiveName} = c.${c.perspectiveName} AND pe.${w.processedAt} IS NULL
  ORDER BY pe.${w.eventId} LIMIT 1
) h ON true
WHERE c.${c.status} & 4 <> 0 AND ($1::text IS NULL OR c.${c.perspectiveName} = $1::text)
ORDER BY c.${c.processedAt} DESC NULLS LAST, c.${c.streamId} LIMIT $2::int`
})
