/**
 * What a test waiting for perspectives across processes asks the database (`@whizbang/testing`'s
 * `MultiHostPerspectiveAwaiter`): the awaited pairs still pending, the awaited events not yet committed, and the
 * awaited pairs dead-lettered. An empty perspective list means every perspective; an empty id list, all pending work.
 */
import { Schema } from "effect"
import { DeadLetters as d, Events as e, PerspectiveEvents as pe } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * The pairs asked about.
 *
 * @category models
 * @since 0.6.0
 */
export interface Request {
  /** Empty: every perspective. */
  readonly perspectives: ReadonlyArray<string>
  /** Empty: all pending work (for {@link pending}). */
  readonly eventIds: ReadonlyArray<string>
}

/**
 * A pending (perspective, event) pair; `error` and `attempts` say why it is stuck when its apply fails.
 *
 * @category models
 * @since 0.6.0
 */
export const Pending = Schema.Struct({
  perspectiveName: Schema.String,
  eventId: Schema.String,
  attempts: Schema.Number,
  error: Schema.NullOr(Schema.String)
})

/**
 * Up to 20 awaited pairs with a pending work row, oldest event first.
 *
 * @category operations
 * @since 0.6.0
 */
export const pending = Operation.findAll({
  name: "awaits.pending",
  Row: Pending,
  columns: { perspectiveName: pe.perspectiveName, eventId: pe.eventId },
  params: (r: Request) => [r.perspectives, r.eventIds],
  sql: `
SELECT pe.${pe.perspectiveName}, pe.${pe.eventId}::text AS ${pe.eventId}, pe.${pe.attempts}, pe.${pe.error} FROM ${pe.table} pe
WHERE pe.${pe.processedAt} IS NULL
  AND (cardinality($1::text[]) = 0 OR pe.${pe.perspectiveName} = ANY($1::text[]))
  AND (cardinality($2::uuid[]) = 0 OR pe.${pe.eventId} = ANY($2::uuid[]))
ORDER BY pe.${pe.eventId} LIMIT 20`
})

/**
 * Up to 20 of the ids given that no stored event has (yet).
 *
 * @category operations
 * @since 0.6.0
 */
export const uncommitted = Operation.findAll({
  name: "awaits.uncommitted",
  Row: Schema.Struct({ eventId: Schema.String }),
  columns: { eventId: "event_id" },
  params: (r: { readonly eventIds: ReadonlyArray<string> }) => [r.eventIds],
  sql: `
SELECT i.id::text AS event_id FROM unnest($1::uuid[]) AS i(id)
WHERE NOT EXISTS (SELECT 1 FROM ${e.table} e WHERE e.${e.eventId} = i.id) LIMIT 20`
})

/**
 * The awaited pairs that were dead-lettered, by event id.
 *
 * @category operations
 * @since 0.6.0
 */
export const deadLettered = Operation.findAll({
  name: "awaits.deadLettered",
  Row: Schema.Struct({ perspectiveName: Schema.String, eventId: Schema.String }),
  columns: { perspectiveName: d.perspectiveName, eventId: d.eventId },
  params: (r: Request) => [r.perspectives, r.eventIds],
  sql: `
SELECT ${d.perspectiveName}, ${d.eventId}::text AS ${d.eventId} FROM ${d.table}
WHERE (cardinality($1::text[]) = 0 OR ${d.perspectiveName} = ANY($1::text[])) AND ${d.eventId} = ANY($2::uuid[])
ORDER BY ${d.eventId}`
})
