/**
 * Takes the lock of one cursor when it is unlocked, expired or already ours, in one statement.
 * Params: $1 stream id, $2 perspective name, $3 instance id, $4 reason, $5 lock timeout in milliseconds.
 * Returns one row when acquired, none otherwise (held by another, or no cursor row: nothing is inserted).
 *
 * Under READ COMMITTED a concurrent acquirer blocks on the row lock and then re-checks the WHERE clause
 * against the winner's committed values, so two instances can never both get a row back.
 * `statement_timestamp()` is the database clock (instances with skewed clocks agree), and unlike `now()` it
 * is not frozen at the start of an enclosing transaction.
 */
export const tryAcquireLock = `
UPDATE wh_perspective_cursors
SET stream_lock_instance_id = $3::uuid,
    stream_lock_expiry = statement_timestamp() + $5::double precision * interval '1 millisecond',
    stream_lock_reason = $4::text
WHERE stream_id = $1::uuid
  AND perspective_name = $2::text
  AND (stream_lock_instance_id IS NULL
    OR stream_lock_instance_id = $3::uuid
    OR stream_lock_expiry IS NULL
    OR stream_lock_expiry <= statement_timestamp())
RETURNING stream_lock_expiry`
