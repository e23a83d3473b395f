/**
 * The replay of one (stream, perspective) shared by rewinds, bootstraps and purges (`@whizbang/stream-locker`): its
 * events in order, the work rows a replay covered, and the model row of the version's own table
 * (`wh_per_<base>__v<N>`, never the view of the live version). Perspective names are validated
 * (`Perspective.validateName`) by the caller and quoted here; every value is a bound parameter.
 */
import { Schema } from "effect"
import * as Identifier from "../internal/identifier.js"
import { DeadLetters as d, Events as e, PerspectiveRows as m, PerspectiveEvents as w } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"
import * as PerspectiveTable from "../internal/perspectiveTable.js"

/** The version's own table, quoted. */
const table = (perspectiveName: string) => Identifier.quote(PerspectiveTable.ofVersion(perspectiveName))

/**
 * An event as a replay folds it.
 *
 * @category models
 * @since 0.5.0
 */
export const EventRow = Schema.Struct({
  eventId: Schema.String,
  eventType: Schema.String,
  payload: Schema.Unknown,
  metadata: Schema.Unknown,
  scope: Schema.Unknown,
  streamVersion: Schema.Number
})

const eventRowColumns = {
  eventId: e.eventId,
  eventType: e.eventType,
  payload: e.payload,
  metadata: e.metadata,
  scope: e.scope,
  streamVersion: e.streamVersion
} as const

/**
 * @category models
 * @since 0.5.0
 */
export type EventRow = typeof EventRow.Type

/**
 * The events a perspective folds for one stream, in event-id order, after an optional event (`afterEventId` null:
 * from the start), skipping events dead-lettered for this perspective (the normal path skipped them too).
 *
 * @category operations
 * @since 0.5.0
 */
export const readEvents = Operation.findAll({
  name: "replays.readEvents",
  Row: EventRow,
  columns: eventRowColumns,
  params: (r: {
    readonly streamId: string
    readonly eventTypes: ReadonlyArray<string>
    readonly afterEventId: string | null
    readonly perspectiveName: string
  }) => [r.streamId, r.eventTypes, r.afterEventId, r.perspectiveName],
  sql: `
SELECT e.${e.eventId}, e.${e.eventType}, e.${e.payload}, e.${e.metadata}, e.${e.scope}, e.${e.streamVersion}::int AS ${e.streamVersion}
FROM ${e.table} e
WHERE e.${e.streamId} = $1::uuid AND e.${e.eventType} = ANY($2::text[]) AND ($3::uuid IS NULL OR e.${e.eventId} > $3::uuid)
  AND NOT EXISTS (
    SELECT 1 FROM ${d.table} d WHERE d.${d.streamId} = e.${e.streamId} AND d.${d.perspectiveName} = $4::text AND d.${d.eventId} = e.${e.eventId}
  )
ORDER BY e.${e.eventId}`
})

/**
 * Deletes the work rows a replay covered. Returns how many it deleted (events never applied before).
 *
 * @category operations
 * @since 0.5.0
 */
export const deleteCoveredWork = Operation.count({
  name: "replays.deleteCoveredWork",
  params: (r: { readonly streamId: string; readonly perspectiveName: string; readonly eventIds: ReadonlyArray<string> }) => [
    r.streamId,
    r.perspectiveName,
    r.eventIds
  ],
  sql: `
DELETE FROM ${w.table}
WHERE ${w.streamId} = $1::uuid AND ${w.perspectiveName} = $2::text AND ${w.eventId} = ANY($3::uuid[])
RETURNING ${w.workId}`
})

/**
 * Writes the rebuilt row; its version grows by `newlyApplied`, the number of events that were never applied
 * before. `data`, `metadata` and `scope` are JSON text.
 *
 * @category operations
 * @since 0.5.0
 */
export const upsertModel = Operation.void({
  name: "replays.upsertModel",
  params: (r: {
    readonly perspectiveName: string
    readonly streamId: string
    readonly data: string
    readonly metadata: string
    readonly scope: string
    readonly newlyApplied: number
  }) => [r.streamId, r.data, r.metadata, r.scope, r.newlyApplied],
  sql: (r) => `
INSERT INTO ${table(r.perspectiveName)} AS t (${m.id}, ${m.data}, ${m.metadata}, ${m.scope}, ${m.version})
VALUES ($1::uuid, $2::jsonb, $3::jsonb, $4::jsonb, $5::int)
ON CONFLICT (${m.id}) DO UPDATE
  SET ${m.data} = excluded.${m.data}, ${m.metadata} = excluded.${m.metadata}, ${m.scope} = excluded.${m.scope}, ${m.version} = t.${m.version} + excluded.${m.version}, ${m.updatedAt} = excluded.${m.updatedAt}`
})

/**
 * Deletes the stream's row of the version's own table.
 *
 * @category operations
 * @since 0.5.0
 */
export const deleteModel = Operation.void({
  name: "replays.deleteModel",
  params: (r: { readonly perspectiveName: string; readonly streamId: string }) => [r.streamId],
  sql: (r) => `DELETE FROM ${table(r.perspectiveName)} WHERE ${m.id} = $1::uuid`
})
