/**
 * The pending events of many streams in one query, for the instance's live leases only, in
 * (stream, perspective, event id) order, at most $3 per (stream, perspective). Rows still in retry backoff are
 * returned flagged `blocked` so the worker stops that (stream, perspective) there instead of skipping ahead.
 *
 * Params: $1 instance id, $2 stream ids, $3 limit per (stream, perspective).
 */
export const fetchPendingEvents = `
SELECT w.work_id, w.stream_id, w.perspective_name, w.event_id, w.attempts,
       (w.scheduled_for IS NOT NULL AND w.scheduled_for > now()) AS blocked,
       e.event_type, e.payload, e.metadata, e.scope, e.stream_version::int AS stream_version
FROM (
  SELECT pe.work_id, pe.stream_id, pe.perspective_name, pe.event_id, pe.attempts, pe.scheduled_for,
         row_number() OVER (PARTITION BY pe.stream_id, pe.perspective_name ORDER BY pe.event_id) AS position
  FROM wh_perspective_events pe
  JOIN wh_active_streams a ON a.stream_id = pe.stream_id AND a.instance_id = $1::uuid AND a.lease_expiry > now()
  WHERE pe.stream_id = ANY($2::uuid[]) AND pe.processed_at IS NULL
) w
JOIN wh_events e ON e.event_id = w.event_id
WHERE w.position <= $3::int
ORDER BY w.stream_id, w.perspective_name, w.event_id`
