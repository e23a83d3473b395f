/**
 * The statements of the database sync inquiry (`PgSyncInquiry`). Every value is a bound parameter; table names
 * are unqualified (each connection's search_path is the service schema).
 *
 * `eventFacts` gathers, per asked event id, what the rule in `internal/inquiryRule.ts` needs. It looks the event
 * up by primary key first, then reaches the work row, dead letters and cursor through their
 * (stream_id, perspective_name, ...) keys, so every lookup is an index probe whatever the table sizes.
 */

/** Params: $1 perspective name, $2 event ids (uuid[]). One row per asked id. */
export const eventFacts = `
SELECT i.id::text AS event_id,
       e.event_type,
       e.event_id IS NOT NULL AS committed,
       pe.work_id IS NOT NULL AS has_work,
       pe.processed_at IS NOT NULL AS work_processed,
       EXISTS (
         SELECT 1 FROM wh_dead_letters d
         WHERE d.stream_id = e.stream_id AND d.perspective_name = $1 AND d.event_id = i.id
       ) AS dead_lettered,
       coalesce(c.last_event_id >= i.id, false) AS cursor_past
FROM unnest($2::uuid[]) AS i(id)
LEFT JOIN wh_events e ON e.event_id = i.id
LEFT JOIN wh_perspective_events pe ON pe.stream_id = e.stream_id AND pe.perspective_name = $1 AND pe.event_id = i.id
LEFT JOIN wh_perspective_cursors c ON c.stream_id = e.stream_id AND c.perspective_name = $1`

/**
 * Cross-scope discovery: the committed events still waiting in the work queue for the perspective, optionally of
 * one stream and of some types, in event-id order.
 * Params: $1 perspective name, $2 stream id (null: every stream), $3 event types (empty: every type), $4 limit.
 */
export const pendingEvents = `
SELECT pe.event_id::text AS event_id
FROM wh_perspective_events pe
JOIN wh_events e ON e.event_id = pe.event_id
WHERE pe.perspective_name = $1 AND ($2::uuid IS NULL OR pe.stream_id = $2::uuid) AND pe.processed_at IS NULL
  AND (cardinality($3::text[]) = 0 OR e.event_type = ANY($3::text[]))
ORDER BY pe.event_id
LIMIT $4`
