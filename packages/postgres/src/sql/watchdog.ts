/**
 * The watchdog's diagnosis: every (stream, perspective) whose oldest pending work row is older than $1 seconds
 * and whose cursor has not advanced in that time, with everything needed to say why — the head (lowest event
 * id) pending row's attempts, error and backoff, the cursor's lock and rewind flag, the stream lease and the
 * lease holder's heartbeat. Classifying happens in `PgWatchdog`, so the rules are unit-testable.
 *
 * `runners` counts the live instances (heartbeat newer than $3 seconds) that run the pair's perspective (an
 * instance with no recorded perspective set runs every one).
 *
 * Params: $1 stuck-after seconds, $2 max rows, $3 dead-instance-after seconds.
 */
export const diagnose = `
WITH heads AS (
  SELECT DISTINCT ON (pe.stream_id, pe.perspective_name)
         pe.stream_id, pe.perspective_name, pe.event_id, pe.attempts, pe.error, pe.scheduled_for, pe.created_at
  FROM wh_perspective_events pe
  WHERE pe.processed_at IS NULL
  ORDER BY pe.stream_id, pe.perspective_name, pe.event_id
),
pending AS (
  SELECT stream_id, perspective_name, count(*)::int AS pending
  FROM wh_perspective_events WHERE processed_at IS NULL GROUP BY stream_id, perspective_name
)
SELECT h.stream_id, h.perspective_name, p.pending, h.event_id, h.attempts, h.error,
       h.scheduled_for, h.scheduled_for IS NOT NULL AND h.scheduled_for > now() AS backing_off,
       extract(epoch FROM now() - h.created_at)::float8 AS waiting_seconds,
       c.status AS cursor_status, c.processed_at AS cursor_processed_at,
       c.rewind_flagged_at, c.rewind_first_flagged_at,
       c.stream_lock_instance_id, c.stream_lock_reason, c.stream_lock_expiry,
       a.instance_id AS lease_instance_id, a.lease_expiry,
       si.instance_id IS NOT NULL AS lease_instance_known,
       extract(epoch FROM now() - si.last_heartbeat_at)::float8 AS lease_heartbeat_age_seconds,
       (SELECT count(*)::int FROM wh_service_instances) AS instances,
       (SELECT count(*)::int FROM wh_service_instances r
        WHERE r.last_heartbeat_at > now() - make_interval(secs => $3::float8)
          AND (r.perspective_names IS NULL OR h.perspective_name = ANY(r.perspective_names))) AS runners
FROM heads h
JOIN pending p ON p.stream_id = h.stream_id AND p.perspective_name = h.perspective_name
LEFT JOIN wh_perspective_cursors c ON c.stream_id = h.stream_id AND c.perspective_name = h.perspective_name
LEFT JOIN wh_active_streams a ON a.stream_id = h.stream_id AND a.lease_expiry > now()
LEFT JOIN wh_service_instances si ON si.instance_id = a.instance_id
WHERE h.created_at <= now() - make_interval(secs => $1::float8)
  AND (c.processed_at IS NULL OR c.processed_at <= now() - make_interval(secs => $1::float8))
ORDER BY h.created_at
LIMIT $2::int`
