/**
 * `wh_lifecycle_pending` statements. An event's lifecycle is complete when none of its work rows is pending
 * that fires receptors (work of a perspective version not live at append does not hold it back) (the NOT EXISTS uses the (stream_id, perspective_name, event_id) unique index through stream_id). A work row
 * that was dead-lettered is gone too, so the claim also returns the perspectives that dead-lettered the event
 * (`dead_lettered_by`, through the (stream_id, perspective_name, event_id) dead-letter index): such an event is
 * reported as dead-lettered, never as applied by every perspective. Rows with `claimed_at = 'infinity'` are parked
 * (see {@link completePending}): the claim never takes them, since `claimed_by` is null but `claimed_at` is set.
 */

/** Params: $1 event ids, $2 stream id. Run in the append transaction. */
export const insertPending = `INSERT INTO wh_lifecycle_pending (event_id, stream_id) SELECT unnest($1::uuid[]), $2::uuid`

/**
 * Claims completed lifecycles and returns their events. Params: $1 instance id, $2 event ids (null = any),
 * $3 seconds after which another instance's claim is taken over.
 */
export const claimCompleted = `
WITH claimed AS (
  UPDATE wh_lifecycle_pending lp SET claimed_by = $1::uuid, claimed_at = now()
  WHERE lp.event_id IN (
    SELECT l.event_id FROM wh_lifecycle_pending l
    WHERE ($2::uuid[] IS NULL OR l.event_id = ANY($2::uuid[]))
      AND ((l.claimed_by IS NULL AND l.claimed_at IS NULL) OR l.claimed_at < now() - make_interval(secs => $3::int))
      AND NOT EXISTS (
        SELECT 1 FROM wh_perspective_events pe
        WHERE pe.stream_id = l.stream_id AND pe.event_id = l.event_id AND pe.processed_at IS NULL AND pe.fires
      )
    ORDER BY l.event_id
    LIMIT 1000
    FOR UPDATE SKIP LOCKED
  )
  RETURNING lp.event_id
)
SELECT e.event_id, e.stream_id, e.stream_version::int AS stream_version, e.event_type, e.payload, e.metadata, e.scope,
       coalesce((
         SELECT array_agg(DISTINCT d.perspective_name ORDER BY d.perspective_name) FROM wh_dead_letters d
         WHERE d.stream_id = e.stream_id AND d.event_id = e.event_id
       ), '{}') AS dead_lettered_by
FROM claimed c JOIN wh_events e ON e.event_id = c.event_id
ORDER BY e.event_id`

/**
 * Forgets lifecycles that fired — except those of events still dead-lettered by some perspective: their
 * `DeadLettered` stage fired, and the row is parked (`claimed_at = 'infinity'`: never claimed, not owed) so that
 * retrying the event's last dead letter (`whizbang dead-letters retry`) releases it, and `PostAllPerspectives` /
 * `PostLifecycle` fire once the retried work is applied. Discarding any of its letters deletes the parked row.
 * Params: $1 event ids.
 */
export const completePending = `
WITH parked AS (
  UPDATE wh_lifecycle_pending l SET claimed_by = NULL, claimed_at = 'infinity'
  WHERE l.event_id = ANY($1::uuid[])
    AND EXISTS (SELECT 1 FROM wh_dead_letters d WHERE d.stream_id = l.stream_id AND d.event_id = l.event_id)
  RETURNING l.event_id
)
DELETE FROM wh_lifecycle_pending l
WHERE l.event_id = ANY($1::uuid[]) AND l.event_id NOT IN (SELECT p.event_id FROM parked p)`
