/**
 * The statements of the database sync inquiry (`PgSyncInquiry`). Every value is a bound parameter; table names
 * are unqualified (each connection's search_path is the service schema).
 *
 * Every statement answers for the SERVING versions of a perspective's base name, resolved in the statement itself
 * (so a check is atomic with respect to a state change such as a cutover): the registered versions in state
 * 'live' or 'ready'; when the base has none of those (no registry rows: in-memory, not registered yet), the key
 * that was asked for, which counts as done for every event when it is registered as 'retired'.
 *
 * `eventFacts` gathers, per (serving key, asked event id), what the rule in `internal/inquiryRule.ts` needs, through
 * `wh_event_facts` (migrations 0015 and 0017 of @whizbang/postgres): one probe by key per lookup, planned once per
 * connection.
 */

/** Params: $1 base name, $2 the key asked for. Columns: key, event_types (null: not registered), retired. */
const serving = `
serving AS (
  SELECT v.perspective_name AS key, v.event_types, false AS retired
  FROM wh_perspective_versions v
  WHERE v.base_name = $1 AND v.state IN ('live', 'ready')
  UNION ALL
  SELECT $2::text, r.event_types, coalesce(r.state = 'retired', false)
  FROM (SELECT 1) AS one
  LEFT JOIN wh_perspective_versions r ON r.perspective_name = $2::text
  WHERE NOT EXISTS (SELECT 1 FROM wh_perspective_versions v WHERE v.base_name = $1 AND v.state IN ('live', 'ready'))
)`

/**
 * Params: $1 base name, $2 the key asked for, $3 event ids (uuid[]). One row per serving key and asked id; the
 * `failing_*` columns (migration 0017) name the stream's failing head in the key's queue while the event waits there.
 */
export const eventFacts = `
SELECT key, event_types, retired, event_id, event_type, committed, has_work, work_processed, dead_lettered, cursor_past,
       stream_id, failing_event_id, failing_error, failing_attempts, failing_next_attempt_at
FROM wh_event_facts($1, $2, $3::uuid[])`

/**
 * Cross-scope discovery of one stream: its committed events still waiting in the work queue of any serving version
 * (a retired key waits for nothing), of some types, in event-id order; with $6, also its events still in the serving
 * versions' dead letters (neither retried nor discarded: the read model lacks them). The stream is a plain
 * condition, so even a generic plan probes the work rows' (stream_id, perspective_name, event_id) key and the dead
 * letters' index: written as `$3 IS NULL OR stream_id = $3` (one statement for both kinds of discovery), the generic
 * plan scanned the whole work queue (2.0 of 2.3 ms with 8,000 work rows).
 * Params: $1 base name, $2 the key asked for, $3 stream id, $4 event types (empty: every type), $5 limit, $6 include
 * dead letters (boolean).
 */
export const pendingEventsOfStream = `
WITH ${serving}
SELECT found.event_id::text AS event_id
FROM (
  SELECT pe.event_id
  FROM wh_perspective_events pe
  JOIN wh_events e ON e.event_id = pe.event_id
  WHERE pe.stream_id = $3::uuid
    AND pe.perspective_name = ANY (ARRAY(SELECT s.key FROM serving s WHERE NOT s.retired))
    AND pe.processed_at IS NULL
    AND (cardinality($4::text[]) = 0 OR e.event_type = ANY($4::text[]))
  UNION
  SELECT d.event_id
  FROM wh_dead_letters d
  WHERE $6::boolean AND d.stream_id = $3::uuid
    AND d.perspective_name = ANY (ARRAY(SELECT s.key FROM serving s WHERE NOT s.retired))
    AND (cardinality($4::text[]) = 0 OR d.event_type = ANY($4::text[]))
) found
ORDER BY found.event_id
LIMIT $5`

/**
 * Cross-scope discovery over every stream (event types alone, `all()`, the inquiry without a stream): the committed
 * events still waiting in the work queue of any serving version, of some types, in event-id order. Broad: it reads
 * the perspective's whole queue. Params: $1 base name, $2 the key asked for, $3 event types (empty: every type),
 * $4 limit.
 */
export const pendingEvents = `
WITH ${serving}
SELECT pe.event_id::text AS event_id
FROM wh_perspective_events pe
JOIN wh_events e ON e.event_id = pe.event_id
WHERE pe.perspective_name = ANY (ARRAY(SELECT s.key FROM serving s WHERE NOT s.retired))
  AND pe.processed_at IS NULL
  AND (cardinality($3::text[]) = 0 OR e.event_type = ANY($3::text[]))
GROUP BY pe.event_id
ORDER BY pe.event_id
LIMIT $4`
