/**
 * Bootstrap statements: the streams a new perspective has history on, the locked placeholder cursor that guards
 * each one while it is rebuilt, its completion, and its removal when the rebuild fails.
 */

/**
 * Streams with events of the given types and no cursor for the perspective, oldest first.
 * Params: $1 event types, $2 perspective name.
 */
export const streamsWithoutCursor = `
SELECT e.stream_id
FROM wh_events e
WHERE e.event_type = ANY($1::text[])
  AND NOT EXISTS (SELECT 1 FROM wh_perspective_cursors c WHERE c.stream_id = e.stream_id AND c.perspective_name = $2::text)
GROUP BY e.stream_id
ORDER BY min(e.created_at), e.stream_id`

/**
 * Creates the pair's cursor as a placeholder (no position) that this instance holds the stream lock of, reason
 * "bootstrap"; returns nothing when a cursor exists already (the normal path got there first), and the bootstrap
 * of that stream then writes nothing. While the lock lives, workers neither claim nor apply the pair, and a
 * completion fetched before it is refused (see `@whizbang/postgres` completeWork).
 * Params: $1 stream id, $2 perspective name, $3 instance id, $4 lock timeout in milliseconds.
 */
export const insertLockedCursor = `
INSERT INTO wh_perspective_cursors (stream_id, perspective_name, status, stream_lock_instance_id, stream_lock_expiry, stream_lock_reason)
VALUES ($1::uuid, $2::text, 0, $3::uuid, statement_timestamp() + $4::double precision * interval '1 millisecond', 'bootstrap')
ON CONFLICT (stream_id, perspective_name) DO NOTHING
RETURNING stream_id`

/**
 * Moves the placeholder to the last replayed event (the lock is released after the commit).
 * Params: $1 stream id, $2 perspective name, $3 last event id.
 */
export const finishCursor = `
UPDATE wh_perspective_cursors SET last_event_id = $3::uuid, status = 2, error = NULL, processed_at = now()
WHERE stream_id = $1::uuid AND perspective_name = $2::text`

/**
 * Removes a placeholder that never got a position (the rebuild failed), held by this instance or already released
 * by it, and untouched by any worker (status still 0), so a later run bootstraps the stream again.
 * Params: $1 stream id, $2 perspective name, $3 instance id.
 */
export const dropPlaceholder = `
DELETE FROM wh_perspective_cursors
WHERE stream_id = $1::uuid AND perspective_name = $2::text AND last_event_id IS NULL AND status = 0
  AND (stream_lock_instance_id IS NULL OR stream_lock_instance_id = $3::uuid)`
