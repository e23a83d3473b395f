/**
 * `wh_lifecycle_pending` statements. An event's lifecycle is complete when none of its work rows is pending
 * (the NOT EXISTS uses the (stream_id, perspective_name, event_id) unique index through stream_id). A work row
 * that was dead-lettered is gone too, so the claim also returns the perspectives that dead-lettered the event
 * (`dead_lettered_by`, through the (stream_id, perspective_name, event_id) dead-letter index): such an event is
 * reported as dead-lettered, never as applied by every perspective.
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
      AND (l.claimed_by IS NULL OR l.claimed_at < now() - make_interval(secs => $3::int))
      AND NOT EXISTS (
        SELECT 1 FROM wh_perspective_events pe
        WHERE pe.stream_id = l.stream_id AND pe.event_id = l.event_id AND pe.processed_at IS NULL
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

/** Params: $1 event ids. */
export const completePending = `DELETE FROM wh_lifecycle_pending WHERE event_id = ANY($1::uuid[])`
