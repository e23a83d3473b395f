import { Schema } from "effect"
import { Events as e } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * A stored event as a statement reads it (`stream_version` cast to int).
 *
 * @category models
 * @since 0.6.0
 */
export const StoredEvent = Schema.Struct({
  eventId: Schema.String,
  streamId: Schema.String,
  streamVersion: Schema.Number,
  eventType: Schema.String,
  // jsonb: the payload is decoded by the event registry; metadata and scope are as the append wrote them.
  payload: Schema.Unknown,
  metadata: Schema.Unknown,
  scope: Schema.Unknown
})

/**
 * A stream's events in version order, after a version, at most `limit` (null: all).
 *
 * @category operations
 * @since 0.5.0
 */
export const readStream = Operation.findAll({
  name: "readStream.readStream",
  Row: StoredEvent,
  columns: { eventId: e.eventId, streamId: e.streamId, streamVersion: e.streamVersion, eventType: e.eventType },
  params: (r: { readonly streamId: string; readonly afterVersion: number; readonly limit: number | null }) => [
    r.streamId,
    r.afterVersion,
    r.limit
  ],
  prepared: true,
  sql: `
SELECT ${e.eventId}, ${e.streamId}, ${e.streamVersion}::int AS ${e.streamVersion}, ${e.eventType}, ${e.payload}, ${e.metadata}, ${e.scope}
FROM ${e.table}
WHERE ${e.streamId} = $1::uuid AND ${e.streamVersion} > $2::bigint
ORDER BY ${e.streamVersion}
LIMIT $3::int`
})
