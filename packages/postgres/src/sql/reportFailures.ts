/**
 * Failure bookkeeping, in the completion transaction: the failed row's attempts grow and it waits out a backoff;
 * the cursor gets the Failed flag and the error but keeps its position (a failure never resets it); a row that
 * reached the attempt limit moves to `wh_dead_letters` with its payload and error, and the stream continues.
 */

/**
 * Backoff: `initial * multiplier ^ (attempts - 1)` milliseconds, capped at `max`. A failure that is not the event's
 * ($7 false: the stored model no longer decodes) waits out the backoff without counting an attempt, so it never
 * dead-letters the event.
 * Params: parallel arrays $1 work ids, $2 errors; $3 initial ms, $4 multiplier, $5 max ms, $6 max attempts (null =
 * unlimited), $7 parallel array: counts an attempt.
 * Returns every updated row, `exhausted` when it reached the limit.
 */
export const recordFailures = `
UPDATE wh_perspective_events pe
SET attempts = pe.attempts + CASE WHEN f.counts THEN 1 ELSE 0 END, error = f.error, instance_id = NULL, lease_expiry = NULL,
    scheduled_for = now() + make_interval(secs => least($5::float8, $3::float8 * power($4::float8, pe.attempts)) / 1000.0)
FROM unnest($1::uuid[], $2::text[], $7::boolean[]) AS f(work_id, error, counts)
WHERE pe.work_id = f.work_id
RETURNING pe.work_id, (f.counts AND $6::int IS NOT NULL AND pe.attempts >= $6::int) AS exhausted`

/** Params: parallel arrays $1 stream ids, $2 perspective names, $3 errors. */
export const flagFailedCursors = `
INSERT INTO wh_perspective_cursors AS c (stream_id, perspective_name, status, error, processed_at)
SELECT s, p, 4, e, now() FROM unnest($1::uuid[], $2::text[], $3::text[]) AS t(s, p, e)
ON CONFLICT (stream_id, perspective_name) DO UPDATE
  SET status = (c.status & ~(1 | 2)) | 4, error = excluded.error, processed_at = excluded.processed_at`

/** Moves exhausted rows to dead letters. Params: $1 work ids. */
export const deadLetter = `
WITH moved AS (
  DELETE FROM wh_perspective_events WHERE work_id = ANY($1::uuid[])
  RETURNING work_id, stream_id, perspective_name, event_id, attempts, error
)
INSERT INTO wh_dead_letters (work_id, stream_id, perspective_name, event_id, event_type, payload, error, attempts)
SELECT m.work_id, m.stream_id, m.perspective_name, m.event_id, e.event_type, e.payload, coalesce(m.error, 'unknown error'), m.attempts
FROM moved m JOIN wh_events e ON e.event_id = m.event_id`
