/**
 * The statements of one completion transaction (read-model rows, cursors and work rows commit together).
 *
 * `fenceStreams` runs first: it renews and row-locks the instance's live leases and returns the streams it still
 * owns. Work on any other stream is not committed — its lease expired or another instance took it over, and that
 * instance redoes it (invariant 5). Holding the row locks until commit stops a takeover in between.
 */

/**
 * Params: $1 instance id, $2 stream ids, $3 lease seconds, $4 boot token of this process (`PgInstanceRegistry`),
 * or null without a registry. With a token, nothing is owned once another process registered the same instance
 * id (a successor after this one was declared dead): instance ids alone cannot tell the two apart.
 */
export const fenceStreams = `
UPDATE wh_active_streams SET lease_expiry = now() + make_interval(secs => $3::int)
WHERE stream_id IN (
  SELECT stream_id FROM wh_active_streams
  WHERE stream_id = ANY($2::uuid[]) AND instance_id = $1::uuid AND lease_expiry > now()
    AND ($4::text IS NULL OR NOT EXISTS (
      SELECT 1 FROM wh_service_instances i WHERE i.instance_id = $1::uuid AND i.metadata->>'bootToken' IS DISTINCT FROM $4::text
    ))
  ORDER BY stream_id FOR UPDATE
)
RETURNING stream_id`

/**
 * Advances cursors. The status is the completion's: Completed (2), or Processing | CatchingUp (1 | 8) while the
 * pair has more pending work the worker is still draining; other flags (RewindRequired) are kept.
 * Params: parallel arrays $1 stream ids, $2 perspective names, $3 last event ids, $4 statuses.
 */
export const advanceCursors = `
INSERT INTO wh_perspective_cursors AS c (stream_id, perspective_name, last_event_id, status, error, processed_at)
SELECT s, p, l, st, NULL, now() FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::int[]) AS t(s, p, l, st)
ON CONFLICT (stream_id, perspective_name) DO UPDATE
  SET last_event_id = excluded.last_event_id, status = (c.status & ~(1 | 2 | 4 | 8)) | excluded.status, error = NULL, processed_at = now()`

/**
 * Deletes exactly the applied work rows. Params: $1 work ids. Returns the rows it removed: fewer than asked means a
 * rewind or bootstrap covered some of them meanwhile, so this completion's model is stale and must roll back.
 */
export const deleteWork = `DELETE FROM wh_perspective_events WHERE work_id = ANY($1::uuid[]) RETURNING work_id`

/** Debug mode: keeps the applied rows, marked processed. Params: $1 work ids. Returns them, like `deleteWork`. */
export const markWorkProcessed = `UPDATE wh_perspective_events SET processed_at = now(), instance_id = NULL, lease_expiry = NULL WHERE work_id = ANY($1::uuid[]) AND processed_at IS NULL RETURNING work_id`

/**
 * Streams with no work left leave `wh_active_streams` (a new append simply claims the stream again).
 * Params: $1 instance id, $2 stream ids.
 */
export const releaseDrainedStreams = `
DELETE FROM wh_active_streams a
WHERE a.stream_id = ANY($2::uuid[]) AND a.instance_id = $1::uuid
  AND NOT EXISTS (SELECT 1 FROM wh_perspective_events pe WHERE pe.stream_id = a.stream_id AND pe.processed_at IS NULL)`
