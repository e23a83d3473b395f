/**
 * Rewind and rebuild statements: database-level only. The worker's rewind machinery acts on the flags;
 * rebuild re-enqueues work the ordinary pipeline applies.
 */
import { Identifier } from "@whizbang/postgres"

/** Keyset page of a perspective's cursor streams. Params: $1 perspective, $2 after stream id, $3 limit. */
export const cursorStreams = `
SELECT stream_id FROM wh_perspective_cursors
WHERE perspective_name = $1::text AND stream_id > $2::uuid ORDER BY stream_id LIMIT $3::int`

/** Params: $1 perspective. */
export const countCursors = `SELECT count(*)::int AS n FROM wh_perspective_cursors WHERE perspective_name = $1::text`

/**
 * Flags cursors RewindRequired with the stream's first event (version 1) as the trigger.
 * Params: $1 perspective, $2 stream ids. Returns the flagged cursors.
 */
export const flagRewind = `
UPDATE wh_perspective_cursors c
SET status = c.status | 32,
    rewind_trigger_event_id = (SELECT e.event_id FROM wh_events e WHERE e.stream_id = c.stream_id ORDER BY e.stream_version LIMIT 1),
    rewind_flagged_at = now(),
    rewind_first_flagged_at = coalesce(c.rewind_first_flagged_at, now())
WHERE c.perspective_name = $1::text AND c.stream_id = ANY($2::uuid[])
RETURNING c.stream_id, c.rewind_trigger_event_id`

/** Streams a rebuild touches: those with a cursor or an event of a handled type. Params: $1 perspective, $2 types. */
export const countRebuildStreams = `
SELECT count(*)::int AS n FROM (
  SELECT stream_id FROM wh_perspective_cursors WHERE perspective_name = $1::text
  UNION SELECT stream_id FROM wh_events WHERE event_type = ANY($2::text[])
) s`

/** Keyset page of {@link countRebuildStreams}. Params: $1 perspective, $2 types, $3 after stream id, $4 limit. */
export const rebuildStreams = `
SELECT stream_id FROM (
  SELECT stream_id FROM wh_perspective_cursors WHERE perspective_name = $1::text
  UNION SELECT stream_id FROM wh_events WHERE event_type = ANY($2::text[])
) s WHERE stream_id > $3::uuid ORDER BY stream_id LIMIT $4::int`

/**
 * What a rebuild resets and re-enqueues, counted before it runs: the streams (those of {@link countRebuildStreams}),
 * the events of the types and the pending work rows. Params: $1 perspective, $2 types, $3 one stream (null: every
 * stream).
 */
export const rebuildCounts = `
WITH streams AS (
  SELECT stream_id FROM wh_perspective_cursors WHERE perspective_name = $1::text AND ($3::uuid IS NULL OR stream_id = $3::uuid)
  UNION SELECT stream_id FROM wh_events WHERE event_type = ANY($2::text[]) AND ($3::uuid IS NULL OR stream_id = $3::uuid)
)
SELECT (SELECT count(*) FROM streams)::int AS streams,
       (SELECT count(*) FROM wh_events WHERE event_type = ANY($2::text[]) AND ($3::uuid IS NULL OR stream_id = $3::uuid))::int AS events,
       (SELECT count(*) FROM wh_perspective_events
        WHERE perspective_name = $1::text AND processed_at IS NULL AND ($3::uuid IS NULL OR stream_id = $3::uuid))::int AS pending`

/**
 * The read-model rows a rebuild empties: those of the streams it resets (a row whose stream has neither a cursor
 * nor an event of the types stays). Params as {@link rebuildCounts}; `table` is a version's own table, quoted here.
 */
export const countModels = (table: string) => `
SELECT count(*)::int AS n FROM ${Identifier.quote(table)} m
WHERE CASE WHEN $3::uuid IS NULL
  THEN EXISTS (SELECT 1 FROM wh_perspective_cursors c WHERE c.perspective_name = $1::text AND c.stream_id = m.id)
    OR EXISTS (SELECT 1 FROM wh_events e WHERE e.stream_id = m.id AND e.event_type = ANY($2::text[]))
  ELSE m.id = $3::uuid END`

/**
 * Revokes the streams' leases first: an instance applying them right now then fails its completion's fencing
 * and rolls back, so nothing it computed from the old model lands after the rebuild. Params: $1 stream ids.
 */
export const revokeLeases = `DELETE FROM wh_active_streams WHERE stream_id = ANY($1::uuid[])`

/** Params: $1 the version's table name (`PerspectiveTable.ofVersion`). Whether it exists. */
export const tableExists = `SELECT to_regclass(quote_ident($1::text)) IS NOT NULL AS present`

/** Params: $1 a table name. Whether it exists as a table (not a view). */
export const baseTableExists = `SELECT coalesce((SELECT c.relkind IN ('r', 'p') FROM pg_class c WHERE c.oid = to_regclass(quote_ident($1::text))), false) AS present`

/** Params: $1 stream ids. `table` is a version's own table (`PerspectiveTable.ofVersion`), quoted here. */
export const deleteModels = (table: string) => `DELETE FROM ${Identifier.quote(table)} WHERE id = ANY($1::uuid[])`

/** Params: $1 perspective, $2 stream ids. */
export const deleteCursors = `DELETE FROM wh_perspective_cursors WHERE perspective_name = $1::text AND stream_id = ANY($2::uuid[])`

/** Params: $1 perspective, $2 stream ids. */
export const deleteSnapshots = `DELETE FROM wh_perspective_snapshots WHERE perspective_name = $1::text AND stream_id = ANY($2::uuid[])`

/** Params: $1 perspective, $2 stream ids. */
export const deletePendingWork = `DELETE FROM wh_perspective_events WHERE perspective_name = $1::text AND stream_id = ANY($2::uuid[])`

/** Params: $1 perspective, $2 stream ids, $3 event types, $4 partition count. Returns one row per enqueued event. */
export const enqueueEvents = `
INSERT INTO wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
SELECT gen_random_uuid(), e.stream_id, $1::text, e.event_id, abs(hashtext(e.stream_id::text)) % $4::int
FROM wh_events e WHERE e.stream_id = ANY($2::uuid[]) AND e.event_type = ANY($3::text[])
RETURNING work_id`

/**
 * Plans the streams' history for the replay (`PgHistoryReplay` in the instances that run the perspective): per stream
 * with events of the types, its newest such event (every later one is routed to the perspective by its append), and
 * adds them to the version's history as planned (`backfill_streams`, `backfill_events`, the replay's progress).
 * Params: $1 perspective, $2 stream ids, $3 event types. Returns the events planned.
 */
export const planHistory = `
WITH planned AS (
  INSERT INTO wh_perspective_backfill (perspective_name, stream_id, through_event_id)
  SELECT DISTINCT ON (e.stream_id) $1::text, e.stream_id, e.event_id
  FROM wh_events e WHERE e.stream_id = ANY($2::uuid[]) AND e.event_type = ANY($3::text[])
  ORDER BY e.stream_id, e.event_id DESC
  ON CONFLICT (perspective_name, stream_id) DO UPDATE SET through_event_id = excluded.through_event_id
  RETURNING 1
),
counted AS (SELECT count(*) AS n FROM wh_events e WHERE e.stream_id = ANY($2::uuid[]) AND e.event_type = ANY($3::text[]))
UPDATE wh_perspective_versions
SET backfill_streams = backfill_streams + (SELECT count(*) FROM planned), backfill_events = backfill_events + (SELECT n FROM counted)
WHERE perspective_name = $1::text
RETURNING (SELECT n FROM counted)::int AS events`

/**
 * Starts the history of a rebuild afresh (nothing of the perspective planned any more): its planned counts and the
 * replay's start. Params: $1 perspective.
 */
export const resetHistory = `
UPDATE wh_perspective_versions SET backfill_streams = 0, backfill_events = 0, replay_started_at = NULL
WHERE perspective_name = $1::text AND NOT EXISTS (SELECT 1 FROM wh_perspective_backfill b WHERE b.perspective_name = $1::text)`
