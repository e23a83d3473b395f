/**
 * Bootstrap statements: the streams a new perspective has history on, and the cursor insert that guards them.
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
 * Creates the cursor at the last replayed event; returns nothing when a cursor appeared meanwhile (the normal path
 * got there first), and the bootstrap of that stream then writes nothing. Params: $1 stream id, $2 perspective
 * name, $3 last event id.
 */
export const insertCursor = `
INSERT INTO wh_perspective_cursors (stream_id, perspective_name, last_event_id, status, processed_at)
VALUES ($1::uuid, $2::text, $3::uuid, 2, now())
ON CONFLICT (stream_id, perspective_name) DO NOTHING
RETURNING stream_id`
