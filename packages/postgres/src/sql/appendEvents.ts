/**
 * The append statement: ONE round trip. `wh_append_events` (migrations 0003, 0005, 0006, 0010, 0014) takes the stream's advisory lock,
 * checks the expected version, refuses supplied ids already stored, mints ids above the stream's highest id,
 * writes the events, their work rows (firing the `wh_notify_work` trigger) and lifecycle rows, and returns
 * `outcome` ('ok' | 'wrong_version' | 'duplicate'), `version` (before the append) and `ids`.
 *
 * Params: $1 stream id, $2 expected version (null = any), $3 event ids (proposed or supplied), $4 supplied flags,
 * $5 types, $6 payloads, $7 correlation id (null = the first event's id), $8 causation id, $9 timestamp,
 * $10 scope, $11 routed event types, $12 routed perspective names (parallel arrays), $13 partition count,
 * $14 lifecycle-tracked types of the batch, $15 notify in this transaction (false: the caller wakes the workers
 * after the commit; migration 0006), $16 wait for the stream's lock (false: a stream locked by another transaction
 * answers `outcome` 'busy' with nothing written; migration 0014).
 */
export const appendEvents = `SELECT outcome, version, ids FROM wh_append_events(
  $1::uuid, $2::bigint, $3::uuid[], $4::boolean[], $5::text[], $6::jsonb[], $7::text, $8::text, $9::text, $10::jsonb,
  $11::text[], $12::text[], $13::int, $14::text[], $15::boolean, $16::boolean)`

export const streamVersion = `SELECT coalesce(max(stream_version), 0)::bigint AS version FROM wh_events WHERE stream_id = $1::uuid`

/**
 * Several appends in ONE round trip (migration 0013): `wh_append_batch` takes each append's stream (each at most
 * once), expected version (null = any), event count, correlation id, causation id, timestamp and scope, then the
 * events of all of them in order, and returns one row per append: `n` (its position, from 1), `outcome`, `version`
 * (before it) and `ids`, as {@link appendEvents} does for one.
 *
 * Params: $1 stream ids, $2 expected versions, $3 event counts, $4 correlation ids, $5 causation ids, $6 timestamps,
 * $7 scopes; $8 event ids, $9 supplied flags, $10 types, $11 payloads; $12 routed event types, $13 routed perspective
 * names, $14 partition count, $15 lifecycle-tracked types (each the union over the appends).
 */
export const appendBatch = `SELECT n, outcome, version, ids FROM wh_append_batch(
  $1::uuid[], $2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::jsonb[],
  $8::uuid[], $9::boolean[], $10::text[], $11::jsonb[], $12::text[], $13::text[], $14::int, $15::text[])`
