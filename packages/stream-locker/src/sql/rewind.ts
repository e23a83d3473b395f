/**
 * Rewind statements: which flagged cursors are due, the commit-time fence, and the cursor's completion.
 */

/**
 * The flagged cursors among the given pairs, each with whether its debounce has elapsed: no late arrival for
 * `$3` ms (sliding window) or flagged for `$4` ms (cap), on the database clock. `$5` true ignores the debounce.
 * Params: parallel arrays $1 stream ids, $2 perspective names; $3 window ms, $4 cap ms, $5 force.
 */
export const flaggedCursors = `
SELECT c.stream_id, c.perspective_name,
       ($5::boolean
         OR c.rewind_flagged_at IS NULL
         OR c.rewind_flagged_at <= now() - $3::double precision * interval '1 millisecond'
         OR c.rewind_first_flagged_at <= now() - $4::double precision * interval '1 millisecond') AS due
FROM wh_perspective_cursors c
JOIN (SELECT DISTINCT * FROM unnest($1::uuid[], $2::text[]) AS t(stream_id, perspective_name)) t
  ON t.stream_id = c.stream_id AND t.perspective_name = c.perspective_name
WHERE c.status & 32 = 32`

/** Every flagged cursor of the given perspectives (the start-up scan). Params: $1 perspective names. */
export const scanFlagged = `
SELECT stream_id, perspective_name FROM wh_perspective_cursors
WHERE status & 32 = 32 AND perspective_name = ANY($1::text[])
ORDER BY rewind_first_flagged_at NULLS FIRST, stream_id`

/** The trigger of a flagged cursor. Params: $1 stream id, $2 perspective name. */
export const readTrigger = `
SELECT rewind_trigger_event_id AS trigger_id FROM wh_perspective_cursors
WHERE stream_id = $1::uuid AND perspective_name = $2::text AND status & 32 = 32`

/**
 * The commit-time fence: locks the cursor row, and returns it only while this instance still holds the stream
 * lock (a lock that expired without being taken still names us, so nothing else ran). Params: $1 stream id,
 * $2 perspective name, $3 instance id.
 */
export const fenceCursor = `
SELECT last_event_id FROM wh_perspective_cursors
WHERE stream_id = $1::uuid AND perspective_name = $2::text AND stream_lock_instance_id = $3::uuid
FOR UPDATE`

/**
 * Moves the cursor to the last replayed event, clears RewindRequired (and Processing/CatchingUp/Failed), the trigger and the
 * flag timestamps. Params: $1 stream id, $2 perspective name, $3 last event id (null = keep).
 */
export const finishCursor = `
UPDATE wh_perspective_cursors
SET last_event_id = coalesce($3::uuid, last_event_id),
    status = (status & ~(32 | 8 | 4 | 1)) | 2,
    error = NULL,
    processed_at = now(),
    rewind_trigger_event_id = NULL,
    rewind_first_flagged_at = NULL,
    rewind_flagged_at = NULL
WHERE stream_id = $1::uuid AND perspective_name = $2::text`
