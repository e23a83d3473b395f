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
 * Matches (as `l`) the event's lifecycle row parked after its `DeadLettered` stage fired (`claimed_at =
 * 'infinity'`, see `wh_lifecycle_pending` in @whizbang/postgres) when the deleted `letter` was the event's last
 * dead letter. The statement's snapshot still sees the letter, so it is excluded by id ($1).
 */
const parkedOfLastLetter = `l.event_id = letter.event_id AND l.claimed_at = 'infinity'
    AND NOT EXISTS (
      SELECT 1 FROM wh_dead_letters d WHERE d.stream_id = letter.stream_id AND d.event_id = letter.event_id AND d.id <> $1::uuid
    )`

/**
 * Moves a dead letter back into the work queue as a fresh row (attempts 0, no backoff) and deletes the letter,
 * in one statement. A work row already pending for the same (stream, perspective, event) is reset instead. When
 * it was the event's last dead letter, the event's parked lifecycle is released: once every perspective has
 * applied the event, `PostAllPerspectives` / `PostLifecycle` fire.
 * Params: $1 id, $2 partition count. Returns the work row, none when the letter does not exist.
 */
export const retry = `
WITH letter AS (
  DELETE FROM wh_dead_letters WHERE id = $1::uuid RETURNING stream_id, perspective_name, event_id
),
released AS (
  UPDATE wh_lifecycle_pending l SET claimed_at = NULL FROM letter WHERE ${parkedOfLastLetter} RETURNING l.event_id
)
INSERT INTO wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, attempts)
SELECT gen_random_uuid(), stream_id, perspective_name, event_id, abs(hashtext(stream_id::text)) % $2::int, 0 FROM letter
ON CONFLICT (stream_id, perspective_name, event_id) DO UPDATE
  SET attempts = 0, error = NULL, scheduled_for = NULL, instance_id = NULL, lease_expiry = NULL
RETURNING work_id, stream_id, perspective_name, event_id`

/**
 * Deletes the letter and the event's parked lifecycle: a perspective will never apply the event, so its
 * lifecycle ended in the `DeadLettered` stage for good (a later retry of another of its letters does not fire
 * `PostAllPerspectives`). Params: $1 id.
 */
export const discard = `
WITH letter AS (
  DELETE FROM wh_dead_letters WHERE id = $1::uuid RETURNING id, stream_id, event_id
),
ended AS (
  DELETE FROM wh_lifecycle_pending l USING letter WHERE l.event_id = letter.event_id AND l.claimed_at = 'infinity' RETURNING l.event_id
)
SELECT id FROM letter`
