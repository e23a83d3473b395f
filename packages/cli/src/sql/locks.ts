/**
 * Force-releases stream locks matching the filters (null = any), whoever holds them.
 * Params: $1 stream id, $2 perspective, $3 holder instance id. Returns the released locks.
 */
export const forceRelease = `
UPDATE wh_perspective_cursors c
SET stream_lock_instance_id = NULL, stream_lock_expiry = NULL, stream_lock_reason = NULL
FROM (
  SELECT stream_id, perspective_name, stream_lock_instance_id AS held_by, stream_lock_reason AS held_for
  FROM wh_perspective_cursors
  WHERE stream_lock_instance_id IS NOT NULL
    AND ($1::uuid IS NULL OR stream_id = $1::uuid)
    AND ($2::text IS NULL OR perspective_name = $2::text)
    AND ($3::uuid IS NULL OR stream_lock_instance_id = $3::uuid)
  FOR UPDATE
) old
WHERE c.stream_id = old.stream_id AND c.perspective_name = old.perspective_name
RETURNING c.stream_id, c.perspective_name, old.held_by, old.held_for`
