/**
 * Failed cursors with their error and the head pending row (attempts, backoff).
 * Params: $1 perspective (null = all), $2 limit.
 */
export const failedCursors = `
SELECT c.stream_id, c.perspective_name, c.last_event_id, c.error, c.processed_at,
       h.event_id AS head_event_id, h.attempts, h.scheduled_for
FROM wh_perspective_cursors c
LEFT JOIN LATERAL (
  SELECT pe.event_id, pe.attempts, pe.scheduled_for FROM wh_perspective_events pe
  WHERE pe.stream_id = c.stream_id AND pe.perspective_name = c.perspective_name AND pe.processed_at IS NULL
  ORDER BY pe.event_id LIMIT 1
) h ON true
WHERE c.status & 4 <> 0 AND ($1::text IS NULL OR c.perspective_name = $1::text)
ORDER BY c.processed_at DESC NULLS LAST, c.stream_id LIMIT $2::int`
