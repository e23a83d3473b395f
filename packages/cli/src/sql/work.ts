/**
 * Pending work by perspective, and its removal: what `whizbang work list` and `work remove` run. Work filed under a
 * name no release runs (enqueued under a misspelled name, or of a perspective removed from the code) waits forever.
 */

const listing = (state: string, join: string) => `
SELECT w.perspective_name, w.pending, w.streams, w.oldest,
       extract(epoch FROM now() - w.oldest)::float8 AS oldest_age_seconds,
       ${state} AS state,
       (SELECT count(*)::int FROM wh_service_instances i
        WHERE i.last_heartbeat_at > now() - make_interval(secs => $1::float8)
          AND (i.perspective_names IS NULL OR w.perspective_name = ANY(i.perspective_names))) AS runners
FROM (
  SELECT perspective_name, count(*)::int AS pending, count(DISTINCT stream_id)::int AS streams, min(created_at) AS oldest
  FROM wh_perspective_events WHERE processed_at IS NULL AND ($2::text IS NULL OR perspective_name = $2::text)
  GROUP BY perspective_name
) w ${join}
ORDER BY w.perspective_name`

/**
 * Per perspective with pending work: its pending rows, their streams, the oldest, its registry state (null: not
 * registered) and the live instances (heartbeat newer than $1 seconds) that run it (an instance with no recorded
 * perspective set runs every one). Params: $1 dead-instance-after seconds, $2 one perspective (null: every one).
 */
export const list = listing("v.state", "LEFT JOIN wh_perspective_versions v ON v.perspective_name = w.perspective_name")

/** {@link list} on a schema without the versions registry (migrated before 0005). */
export const listWithoutRegistry = listing("NULL::text", "")

/** Params: $1 perspective. Row-locks its registry row, if any, so it cannot be registered while its work is removed. */
export const lockRegistered = `SELECT state FROM wh_perspective_versions WHERE perspective_name = $1::text FOR UPDATE`

/**
 * Removes every work row of the perspective (pending, or kept as processed in debug mode) and its planned history.
 * Params: $1 perspective. Returns the pending rows and streams removed.
 */
export const remove = `
WITH work AS (
  DELETE FROM wh_perspective_events WHERE perspective_name = $1::text RETURNING stream_id, processed_at
)
SELECT count(*) FILTER (WHERE processed_at IS NULL)::int AS pending,
       count(DISTINCT stream_id) FILTER (WHERE processed_at IS NULL)::int AS streams
FROM work`

/** Params: $1 perspective. The history planned for it (a version registered, then removed from the code). */
export const removePlanned = `DELETE FROM wh_perspective_backfill WHERE perspective_name = $1::text RETURNING 1`
