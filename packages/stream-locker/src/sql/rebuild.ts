/**
 * Statements shared by rewinds, bootstraps and purges of one (stream, perspective). Perspective table names are
 * validated (`Perspective.isValidName`) and quoted; every value is a bound parameter.
 */
import { Identifier, PerspectiveTable } from "@whizbang/postgres"

/** The version's own table (`wh_per_<base>__v<N>`), never the view of the live version. */
const table = (perspectiveName: string) => Identifier.quote(PerspectiveTable.ofVersion(perspectiveName))

/**
 * The events a perspective folds for one stream, in event-id order, after an optional event, skipping events
 * dead-lettered for this perspective (the normal path skipped them too). Params: $1 stream id, $2 event types,
 * $3 after event id (null = from the start), $4 perspective name.
 */
export const readEvents = `
SELECT e.event_id, e.event_type, e.payload, e.metadata, e.scope, e.stream_version::int AS stream_version
FROM wh_events e
WHERE e.stream_id = $1::uuid AND e.event_type = ANY($2::text[]) AND ($3::uuid IS NULL OR e.event_id > $3::uuid)
  AND NOT EXISTS (
    SELECT 1 FROM wh_dead_letters d WHERE d.stream_id = e.stream_id AND d.perspective_name = $4::text AND d.event_id = e.event_id
  )
ORDER BY e.event_id`

/** Deletes the work rows a replay covered. Params: $1 stream id, $2 perspective name, $3 event ids. Returns them. */
export const deleteCoveredWork = `
DELETE FROM wh_perspective_events
WHERE stream_id = $1::uuid AND perspective_name = $2::text AND event_id = ANY($3::uuid[])
RETURNING work_id`

/**
 * Writes the rebuilt row; its version grows by the number of events that were never applied before ($5).
 * Params: $1 id, $2 data, $3 metadata, $4 scope, $5 newly applied events.
 */
export const upsertModel = (perspectiveName: string) => `
INSERT INTO ${table(perspectiveName)} AS t (id, data, metadata, scope, version)
VALUES ($1::uuid, $2::jsonb, $3::jsonb, $4::jsonb, $5::int)
ON CONFLICT (id) DO UPDATE
  SET data = excluded.data, metadata = excluded.metadata, scope = excluded.scope, version = t.version + excluded.version, updated_at = now()`

/** Params: $1 id. */
export const deleteModel = (perspectiveName: string) => `DELETE FROM ${table(perspectiveName)} WHERE id = $1::uuid`
