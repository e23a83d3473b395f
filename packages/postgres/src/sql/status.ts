/**
 * Operational read-outs for `PgStatus` (the `whizbang status` command and `PgHealth`). These scan the work,
 * cursor and dead-letter tables with GROUP BY: meant for an operator or a health probe every few seconds, not
 * for the hot path.
 */

/**
 * One row per perspective that has cursors, pending work or dead letters, with the live instances (heartbeat newer
 * than $1 seconds) that run it (an instance with no recorded perspective set runs every one).
 */
export const perspectives = `
WITH names AS (
  SELECT perspective_name FROM wh_perspective_cursors
  UNION SELECT perspective_name FROM wh_perspective_events WHERE processed_at IS NULL
  UNION SELECT perspective_name FROM wh_dead_letters
),
cur AS (
  SELECT perspective_name, count(*)::int AS streams,
         count(*) FILTER (WHERE status & 4 <> 0)::int AS failed,
         count(*) FILTER (WHERE status & 32 <> 0)::int AS rewind_required
  FROM wh_perspective_cursors GROUP BY perspective_name
),
work AS (
  SELECT pe.perspective_name, count(*)::int AS pending, count(DISTINCT pe.stream_id)::int AS pending_streams,
         extract(epoch FROM now() - min(e.created_at))::float8 AS lag_seconds
  FROM wh_perspective_events pe JOIN wh_events e ON e.event_id = pe.event_id
  WHERE pe.processed_at IS NULL GROUP BY pe.perspective_name
),
dl AS (SELECT perspective_name, count(*)::int AS dead_letters FROM wh_dead_letters GROUP BY perspective_name)
SELECT n.perspective_name, coalesce(cur.streams, 0) AS streams, coalesce(work.pending, 0) AS pending,
       coalesce(work.pending_streams, 0) AS pending_streams, coalesce(work.lag_seconds, 0) AS lag_seconds,
       coalesce(cur.failed, 0) AS failed, coalesce(cur.rewind_required, 0) AS rewind_required,
       coalesce(dl.dead_letters, 0) AS dead_letters,
       (SELECT count(*)::int FROM wh_service_instances i
        WHERE i.last_heartbeat_at > now() - make_interval(secs => $1::float8)
          AND (i.perspective_names IS NULL OR n.perspective_name = ANY(i.perspective_names))) AS running_instances
FROM names n
LEFT JOIN cur ON cur.perspective_name = n.perspective_name
LEFT JOIN work ON work.perspective_name = n.perspective_name
LEFT JOIN dl ON dl.perspective_name = n.perspective_name
ORDER BY n.perspective_name`

/** Every registered instance with its heartbeat age in seconds. */
export const instances = `
SELECT instance_id, service_name, host_name, process_id, started_at, perspective_names,
       extract(epoch FROM now() - last_heartbeat_at)::float8 AS heartbeat_age_seconds
FROM wh_service_instances ORDER BY service_name, started_at`

/** Every cursor that carries a stream lock (live or expired). */
export const locks = `
SELECT stream_id, perspective_name, stream_lock_instance_id, stream_lock_reason, stream_lock_expiry,
       stream_lock_expiry IS NOT NULL AND stream_lock_expiry <= now() AS expired
FROM wh_perspective_cursors WHERE stream_lock_instance_id IS NOT NULL
ORDER BY perspective_name, stream_id`

/**
 * Events whose end-of-processing stages are still owed (every perspective must apply them first), and events that
 * a perspective dead-lettered: their lifecycle ended in the `DeadLettered` stage, never in `PostAllPerspectives`
 * (unless their last dead letter is retried: a parked row, `claimed_at = 'infinity'`, is not owed).
 */
export const lifecycles = `
SELECT (SELECT count(*)::int FROM wh_lifecycle_pending WHERE claimed_at IS DISTINCT FROM 'infinity') AS pending,
       (SELECT count(DISTINCT event_id)::int FROM wh_dead_letters) AS dead_lettered_events`
