/** Dead-letter statements of the CLI. Every value is a bound parameter. */

/** Params: $1 perspective (null = all), $2 limit. */
export const list = `
SELECT id, perspective_name, stream_id, event_id, event_type, attempts, error, created_at
FROM wh_dead_letters WHERE ($1::text IS NULL OR perspective_name = $1::text)
ORDER BY created_at, id LIMIT $2::int`

/** Params: $1 id. */
export const show = `
SELECT id, work_id, perspective_name, stream_id, event_id, event_type, attempts, error, payload, created_at
FROM wh_dead_letters WHERE id = $1::uuid`

/**
 * Moves a dead letter back into the work queue as a fresh row (attempts 0, no backoff) and deletes the letter,
 * in one statement. A work row already pending for the same (stream, perspective, event) is reset instead.
 * Params: $1 id, $2 partition count. Returns the work row, none when the letter does not exist.
 */
export const retry = `
WITH letter AS (
  DELETE FROM wh_dead_letters WHERE id = $1::uuid RETURNING stream_id, perspective_name, event_id
)
INSERT INTO wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, attempts)
SELECT gen_random_uuid(), stream_id, perspective_name, event_id, abs(hashtext(stream_id::text)) % $2::int, 0 FROM letter
ON CONFLICT (stream_id, perspective_name, event_id) DO UPDATE
  SET attempts = 0, error = NULL, scheduled_for = NULL, instance_id = NULL, lease_expiry = NULL
RETURNING work_id, stream_id, perspective_name, event_id`

/** Params: $1 id. */
export const discard = `DELETE FROM wh_dead_letters WHERE id = $1::uuid RETURNING id`
