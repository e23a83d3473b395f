/**
 * Statements of the history replay (`PgHistoryReplay`): a version's planned history (`wh_perspective_backfill`) read
 * in large ordered batches, folded in memory and written in bulk — one transaction per chunk of streams, no work row
 * per historical event.
 *
 * Fencing: {@link pickChunk} row-locks the chunk's plan rows (`FOR UPDATE SKIP LOCKED`) for the whole transaction, so
 * a second replayer (another fiber or instance) skips them, and the worker does not fetch the version's live work on
 * those streams while the plan rows exist (see `fetchPendingEvents`). The transaction deletes them with the models and
 * cursors it writes: a crash (kill -9) rolls all of it back and the rows are picked again — the replay resumes from
 * its last committed chunk. Every value is a bound parameter.
 */

/**
 * Up to $3 planned streams of key $1 after stream $2 (keyset: each replayer walks the plan in stream order from where
 * its last chunk ended, so it never re-reads the index entries of the rows already replayed and deleted, which stay
 * until VACUUM), row-locked, skipping those another replayer holds. `has_cursor`: the pair already has a cursor (a
 * rewind, bootstrap or an earlier path touched it); such a stream goes through the work-row path.
 * Params: $1 key, $2 after stream id, $3 most streams.
 */
export const pickChunk = `
SELECT b.stream_id, b.through_event_id,
       EXISTS (SELECT 1 FROM wh_perspective_cursors c WHERE c.stream_id = b.stream_id AND c.perspective_name = b.perspective_name)
         AS has_cursor
FROM wh_perspective_backfill b
WHERE b.perspective_name = $1::text AND b.stream_id > $2::uuid
ORDER BY b.stream_id
LIMIT $3::int
FOR UPDATE OF b SKIP LOCKED`

/**
 * The history of the picked streams: every event of the types ($3) up to each stream's `through_event_id` ($2). Each
 * stream's events come from one descent of the (stream_id, event_id) index, in event-id order; the statement does not
 * sort (the caller groups the rows by stream, and the runner sorts a stream's events only if they arrive out of order).
 * Params: $1 stream ids, $2 their through event ids, $3 event types.
 */
export const readHistory = `
SELECT e.stream_id, e.event_id, e.event_type, e.payload, e.metadata, e.scope, e.stream_version::int AS stream_version
FROM unnest($1::uuid[], $2::uuid[]) AS b(stream_id, through_event_id)
CROSS JOIN LATERAL (
  SELECT e.* FROM wh_events e
  WHERE e.stream_id = b.stream_id AND e.event_id <= b.through_event_id AND e.event_type = ANY($3::text[])
  ORDER BY e.event_id
) e`

/**
 * The chunk's bookkeeping, in one statement (after its models were written):
 * - a cursor per replayed stream at its last applied event, status Completed (2), as `wh_complete_work` writes them;
 *   one that appeared since the pick (a bootstrap) is not overwritten — `cursors` counts the ones written and the
 *   caller rolls the chunk back when it is short;
 * - the replayed streams' pending work rows of the version for events the fold already applied (an event committed
 *   with a caller-supplied, older id after the plan was made; or an append racing `whizbang rebuild`'s plan): they
 *   were covered by the fold, and would otherwise be applied a second time;
 * - the work-row path for the streams that could not be replayed here ($5, $6: a failing fold, an existing cursor):
 *   their history becomes work rows that fire no receptors, as before replays existed, so failures retry and
 *   dead-letter as they always did;
 * - the plan rows of every picked stream are deleted.
 * Params: $1 key, $2 replayed streams, $3 their last applied event ids, $4 event types, $5 fallback streams, $6
 * their through event ids, $7 partition count, $8 all picked streams.
 */
export const finishChunk = `
WITH cursors AS (
  INSERT INTO wh_perspective_cursors (stream_id, perspective_name, last_event_id, status, error, processed_at)
  SELECT r.stream_id, $1::text, r.last_event_id, 2, NULL, now()
  FROM unnest($2::uuid[], $3::uuid[]) AS r(stream_id, last_event_id)
  ON CONFLICT (stream_id, perspective_name) DO NOTHING
  RETURNING 1
),
covered AS (
  DELETE FROM wh_perspective_events pe
  USING unnest($2::uuid[], $3::uuid[]) AS r(stream_id, last_event_id)
  WHERE pe.stream_id = r.stream_id AND pe.perspective_name = $1::text AND pe.event_id <= r.last_event_id
  RETURNING 1
),
fallback AS (
  INSERT INTO wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, fires)
  SELECT gen_random_uuid(), e.stream_id, $1::text, e.event_id, abs(hashtext(e.stream_id::text)) % $7::int, false
  FROM unnest($5::uuid[], $6::uuid[]) AS f(stream_id, through_event_id)
  JOIN wh_events e ON e.stream_id = f.stream_id AND e.event_id <= f.through_event_id
  WHERE e.event_type = ANY($4::text[])
  ON CONFLICT (stream_id, perspective_name, event_id) DO NOTHING
  RETURNING 1
),
forgotten AS (
  DELETE FROM wh_perspective_backfill b
  WHERE b.perspective_name = $1::text AND b.stream_id = ANY($8::uuid[])
  RETURNING 1
)
SELECT (SELECT count(*) FROM cursors)::int AS cursors, (SELECT count(*) FROM covered)::int AS covered,
       (SELECT count(*) FROM fallback)::int AS fallback, (SELECT count(*) FROM forgotten)::int AS forgotten`

/**
 * How long the oldest pending live work (rows that fire receptors: versions serving reads) of perspectives $1 has
 * waited, in milliseconds (0: none), counting only work a worker could take now: not in retry backoff, not held back
 * behind planned history. The replay pauses while it is above its target (live work first). The claim index
 * (`event_id` where pending and firing) gives the oldest row first.
 * Params: $1 perspective keys.
 */
export const liveLagMillis = `
SELECT coalesce((
  SELECT extract(epoch FROM clock_timestamp() - pe.created_at) * 1000
  FROM wh_perspective_events pe
  WHERE pe.processed_at IS NULL AND pe.fires AND pe.perspective_name = ANY($1::text[])
    AND (pe.scheduled_for IS NULL OR pe.scheduled_for <= now())
    AND NOT EXISTS (
      SELECT 1 FROM wh_perspective_backfill b WHERE b.perspective_name = pe.perspective_name AND b.stream_id = pe.stream_id
    )
  ORDER BY pe.event_id
  LIMIT 1
), 0)::float8 AS millis`

/** Params: $1 key. Marks when the replay of the version's planned history started (the rate's origin), once. */
export const markStarted = `
UPDATE wh_perspective_versions SET replay_started_at = now()
WHERE perspective_name = $1::text AND replay_started_at IS NULL`

/** Params: $1 keys. The keys among $1 with history planned. */
export const plannedKeys = `
SELECT k.key AS perspective_name FROM unnest($1::text[]) AS k(key)
WHERE EXISTS (SELECT 1 FROM wh_perspective_backfill b WHERE b.perspective_name = k.key)`

/**
 * Params: $1 keys. Of each version: its history as planned (streams, events) and the streams still planned — the
 * replay's progress, sampled every few seconds (the count walks the plan's index, about 10 ms per 100,000 rows).
 */
export const progress = `
SELECT v.perspective_name, v.backfill_streams, v.backfill_events::float8 AS backfill_events,
       (SELECT count(*) FROM wh_perspective_backfill b WHERE b.perspective_name = v.perspective_name)::int AS planned
FROM wh_perspective_versions v WHERE v.perspective_name = ANY($1::text[])`
