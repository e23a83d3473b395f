/**
 * Clears a lock this instance holds, in one statement; a lock held by another instance, or none, is left as is.
 * Params: $1 stream id, $2 perspective name, $3 instance id. Returns one row when released.
 */
export const releaseLock = `
UPDATE wh_perspective_cursors
SET stream_lock_instance_id = NULL,
    stream_lock_expiry = NULL,
    stream_lock_reason = NULL
WHERE stream_id = $1::uuid
  AND perspective_name = $2::text
  AND stream_lock_instance_id = $3::uuid
RETURNING stream_id`
