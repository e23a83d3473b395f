/**
 * Restarts the expiry of a lock this instance holds, in one statement.
 * Params: $1 stream id, $2 perspective name, $3 instance id, $4 lock timeout in milliseconds.
 * Returns one row when renewed, none when another instance (or nobody) holds the lock.
 *
 * An expired lock still naming us is renewed: nobody took it in between, so nothing else ran under it.
 */
export const renewLock = `
UPDATE wh_perspective_cursors
SET stream_lock_expiry = statement_timestamp() + $4::double precision * interval '1 millisecond'
WHERE stream_id = $1::uuid
  AND perspective_name = $2::text
  AND stream_lock_instance_id = $3::uuid
RETURNING stream_lock_expiry`
