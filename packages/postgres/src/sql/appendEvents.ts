/**
 * The statements of one append, run in one transaction by `PgEventStore`.
 *
 * 1. `lockStream`: a transaction-scoped advisory lock on (schema, stream) serialises appends to one stream, so the
 *    version read next is exact and concurrent appenders queue instead of failing on the unique key and retrying.
 * 2. `streamVersion`: the current version.
 * 3. `insertEvents`: the events and, in the same statement, one work row per (event, perspective handling its type).
 *    The work rows' insert fires the `wh_notify_work` trigger, so listeners wake when the transaction commits.
 */

/** Namespace of Whizbang's stream advisory locks (the first key of the two-key form). */
const streamLockNamespace = 0x5748_0001

export const lockStream = `SELECT pg_advisory_xact_lock(${streamLockNamespace}, hashtext(current_schema() || ':' || $1::text))`

export const streamVersion = `SELECT coalesce(max(stream_version), 0)::bigint AS version FROM wh_events WHERE stream_id = $1::uuid`

/**
 * Params: $1 event ids, $2 stream id, $3 versions, $4 types, $5 payloads, $6 metadata, $7 scopes,
 * $8 routed event types, $9 routed perspective names (parallel arrays), $10 partition count.
 */
export const insertEvents = `
WITH inserted AS (
  INSERT INTO wh_events (event_id, stream_id, stream_version, event_type, payload, metadata, scope)
  SELECT e.event_id, $2::uuid, e.stream_version, e.event_type, e.payload, e.metadata, e.scope
  FROM unnest($1::uuid[], $3::bigint[], $4::text[], $5::jsonb[], $6::jsonb[], $7::jsonb[])
    AS e(event_id, stream_version, event_type, payload, metadata, scope)
  RETURNING event_id, stream_id, event_type
)
INSERT INTO wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
SELECT gen_random_uuid(), i.stream_id, r.perspective_name, i.event_id, abs(hashtext(i.stream_id::text)) % $10::int
FROM inserted i
JOIN unnest($8::text[], $9::text[]) AS r(event_type, perspective_name) ON r.event_type = i.event_type`
