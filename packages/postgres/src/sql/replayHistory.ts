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
import { Schema } from "effect"
import {
  Events as e,
  PerspectiveBackfill as b,
  PerspectiveCursors as c,
  PerspectiveEvents as pe,
  PerspectiveVersions as v
} from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * A planned stream a chunk picked: its history's last event, and whether the pair has a cursor already.
 *
 * @category models
 * @since 0.5.0
 */
export const Picked = Schema.Struct({ streamId: Schema.String, throughEventId: Schema.String, hasCursor: Schema.Boolean })

/**
 * An event of a picked stream's history.
 *
 * @category models
 * @since 0.5.0
 */
export const HistoryEvent = Schema.Struct({
  streamId: Schema.String,
  eventId: Schema.String,
  eventType: Schema.String,
  // jsonb: the payload is decoded by the event registry; metadata and scope as the append wrote them.
  payload: Schema.Unknown,
  metadata: Schema.Unknown,
  scope: Schema.Unknown,
  streamVersion: Schema.Number
})

/** Perspective keys. */
interface Keys {
  readonly keys: ReadonlyArray<string>
}

/**
 * Up to $3 planned streams of key $1 after stream $2 (keyset: each replayer walks the plan in stream order from where
 * its last chunk ended, so it never re-reads the index entries of the rows already replayed and deleted, which stay
 * until VACUUM), row-locked, skipping those another replayer holds. `has_cursor`: the pair already has a cursor (a
 * rewind, bootstrap or an earlier path touched it); such a stream goes through the work-row path.
 * Params: $1 key, $2 after stream id, $3 most streams.
 */
export const pickChunk = Operation.findAll({
  name: "replayHistory.pickChunk",
  Row: Picked,
  columns: { streamId: b.streamId, throughEventId: b.throughEventId, hasCursor: "has_cursor" },
  params: (r: { readonly key: string; readonly after: string; readonly maxStreams: number }) => [r.key, r.after, r.maxStreams],
  sql: `
SELECT b.${b.streamId}, b.${b.throughEventId},
       EXISTS (SELECT 1 FROM ${c.table} c WHERE c.${c.streamId} = b.${b.streamId} AND c.${c.perspectiveName} = b.${b.perspectiveName})
         AS has_cursor
FROM ${b.table} b
WHERE b.${b.perspectiveName} = $1::text AND b.${b.streamId} > $2::uuid
ORDER BY b.${b.streamId}
LIMIT $3::int
FOR UPDATE OF b SKIP LOCKED`
})

/**
 * The history of the picked streams: every event of the types ($3) up to each stream's `through_event_id` ($2). Each
 * stream's events come from one descent of the (stream_id, event_id) index, in event-id order; the statement does not
 * sort (the caller groups the rows by stream, and the runner sorts a stream's events only if they arrive out of order).
 * Params: $1 stream ids, $2 their through event ids, $3 event types.
 */
export const readHistory = Operation.findAll({
  name: "replayHistory.readHistory",
  Row: HistoryEvent,
  columns: { streamId: e.streamId, eventId: e.eventId, eventType: e.eventType, streamVersion: e.streamVersion },
  params: (r: {
    readonly streamIds: ReadonlyArray<string>
    readonly throughEventIds: ReadonlyArray<string>
    readonly eventTypes: ReadonlyArray<string>
  }) => [r.streamIds, r.throughEventIds, r.eventTypes],
  sql: `
SELECT e.${e.streamId}, e.${e.eventId}, e.${e.eventType}, e.${e.payload}, e.${e.metadata}, e.${e.scope}, e.${e.streamVersion}::int AS ${e.streamVersion}
FROM unnest($1::uuid[], $2::uuid[]) AS b(stream_id, through_event_id)
CROSS JOIN LATERAL (
  SELECT e.* FROM ${e.table} e
  WHERE e.${e.streamId} = b.stream_id AND e.${e.eventId} <= b.through_event_id AND e.${e.eventType} = ANY($3::text[])
  ORDER BY e.${e.eventId}
) e`
})

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
export const finishChunk = Operation.single({
  name: "replayHistory.finishChunk",
  Row: Schema.Struct({ cursors: Schema.Number, covered: Schema.Number, fallback: Schema.Number, forgotten: Schema.Number }),
  params: (r: {
    readonly key: string
    readonly replayed: ReadonlyArray<string>
    readonly lastEventIds: ReadonlyArray<string>
    readonly eventTypes: ReadonlyArray<string>
    readonly fallback: ReadonlyArray<string>
    readonly fallbackThrough: ReadonlyArray<string>
    readonly partitionCount: number
    readonly picked: ReadonlyArray<string>
  }) => [r.key, r.replayed, r.lastEventIds, r.eventTypes, r.fallback, r.fallbackThrough, r.partitionCount, r.picked],
  sql: `
WITH cursors AS (
  INSERT INTO ${c.table} (${c.streamId}, ${c.perspectiveName}, ${c.lastEventId}, ${c.status}, ${c.error}, ${c.processedAt})
  SELECT r.stream_id, $1::text, r.last_event_id, 2, NULL, now()
  FROM unnest($2::uuid[], $3::uuid[]) AS r(stream_id, last_event_id)
  ON CONFLICT (${c.streamId}, ${c.perspectiveName}) DO NOTHING
  RETURNING 1
),
covered AS (
  DELETE FROM ${pe.table} pe
  USING unnest($2::uuid[], $3::uuid[]) AS r(stream_id, last_event_id)
  WHERE pe.${pe.streamId} = r.stream_id AND pe.${pe.perspectiveName} = $1::text AND pe.${pe.eventId} <= r.last_event_id
  RETURNING 1
),
fallback AS (
  INSERT INTO ${pe.table} (${pe.workId}, ${pe.streamId}, ${pe.perspectiveName}, ${pe.eventId}, ${pe.partitionNumber}, ${pe.fires})
  SELECT gen_random_uuid(), e.${e.streamId}, $1::text, e.${e.eventId}, abs(hashtext(e.${e.streamId}::text)) % $7::int, false
  FROM unnest($5::uuid[], $6::uuid[]) AS f(stream_id, through_event_id)
  JOIN ${e.table} e ON e.${e.streamId} = f.stream_id AND e.${e.eventId} <= f.through_event_id
  WHERE e.${e.eventType} = ANY($4::text[])
  ON CONFLICT (${pe.streamId}, ${pe.perspectiveName}, ${pe.eventId}) DO NOTHING
  RETURNING 1
),
forgotten AS (
  DELETE FROM ${b.table} b
  WHERE b.${b.perspectiveName} = $1::text AND b.${b.streamId} = ANY($8::uuid[])
  RETURNING 1
)
SELECT (SELECT count(*) FROM cursors)::int AS cursors, (SELECT count(*) FROM covered)::int AS covered,
       (SELECT count(*) FROM fallback)::int AS fallback, (SELECT count(*) FROM forgotten)::int AS forgotten`
})

/**
 * How long the oldest pending live work (rows that fire receptors: versions serving reads) of perspectives $1 has
 * waited, in milliseconds (0: none), counting only work a worker could take now: not in retry backoff, not held back
 * behind planned history. The replay pauses while it is above its target (live work first). The claim index
 * (`event_id` where pending and firing) gives the oldest row first.
 * Params: $1 perspective keys.
 */
export const liveLagMillis = Operation.single({
  name: "replayHistory.liveLagMillis",
  Row: Schema.Struct({ millis: Schema.Number }),
  params: (r: Keys) => [r.keys],
  sql: `
SELECT coalesce((
  SELECT extract(epoch FROM clock_timestamp() - pe.${pe.createdAt}) * 1000
  FROM ${pe.table} pe
  WHERE pe.${pe.processedAt} IS NULL AND pe.${pe.fires} AND pe.${pe.perspectiveName} = ANY($1::text[])
    AND (pe.${pe.scheduledFor} IS NULL OR pe.${pe.scheduledFor} <= now())
    AND NOT EXISTS (
      SELECT 1 FROM ${b.table} b WHERE b.${b.perspectiveName} = pe.${pe.perspectiveName} AND b.${b.streamId} = pe.${pe.streamId}
    )
  ORDER BY pe.${pe.eventId}
  LIMIT 1
), 0)::float8 AS millis`
})

/**
 * The planner's idea of the plan table's size (`pg_class.reltuples`: -1 never analyzed), to compare with the rows
 * planned. A plan written since the last ANALYZE (a version registered, `whizbang rebuild`) looks empty to the
 * planner until autovacuum comes round — a minute or more, often longer than the replay — and then
 * {@link pickChunk} reads and sorts every remaining plan row (on disk past `work_mem`) to take a few hundred, and
 * {@link finishChunk} filters them all to delete its own: about 75 ms of server time per chunk at 100,000 planned
 * streams, growing with the plan.
 */
export const planEstimate = Operation.single({
  name: "replayHistory.planEstimate",
  Row: Schema.Struct({ estimated: Schema.Number }),
  sql: `
SELECT coalesce((
  SELECT c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = current_schema() AND c.relname = '${b.table}'
), -1)::float8 AS estimated`
})

/**
 * Fresh planner statistics for the plan table (see {@link planEstimate}), unless another session is analyzing or
 * vacuuming it (`SKIP_LOCKED`). ANALYZE takes no lock that blocks reads or writes; a role that does not own the table
 * gets a warning, not an error.
 */
export const analyzePlan = Operation.void({
  name: "replayHistory.analyzePlan",
  sql: `ANALYZE (SKIP_LOCKED) ${b.table}`
})

/** Params: $1 key. Marks when the replay of the version's planned history started (the rate's origin), once. */
export const markStarted = Operation.void({
  name: "replayHistory.markStarted",
  params: (r: { readonly key: string }) => [r.key],
  sql: `
UPDATE ${v.table} SET ${v.replayStartedAt} = now()
WHERE ${v.perspectiveName} = $1::text AND ${v.replayStartedAt} IS NULL`
})

/** Params: $1 keys. The keys among $1 with history planned. */
export const plannedKeys = Operation.findAll({
  name: "replayHistory.plannedKeys",
  Row: Schema.Struct({ key: Schema.String }),
  columns: { key: b.perspectiveName },
  params: (r: Keys) => [r.keys],
  sql: `
SELECT k.key AS ${b.perspectiveName} FROM unnest($1::text[]) AS k(key)
WHERE EXISTS (SELECT 1 FROM ${b.table} b WHERE b.${b.perspectiveName} = k.key)`
})

/**
 * A version's history as planned (streams, events) and the streams still planned.
 *
 * @category models
 * @since 0.5.0
 */
export const Progress = Schema.Struct({
  key: Schema.String,
  backfillStreams: Schema.Number,
  backfillEvents: Schema.Number,
  planned: Schema.Number
})

/**
 * Params: $1 keys. Of each version: its history as planned (streams, events) and the streams still planned — the
 * replay's progress, sampled every few seconds (the count walks the plan's index, about 10 ms per 100,000 rows).
 */
export const progress = Operation.findAll({
  name: "replayHistory.progress",
  Row: Progress,
  columns: { key: v.perspectiveName, backfillStreams: v.backfillStreams, backfillEvents: v.backfillEvents },
  params: (r: Keys) => [r.keys],
  sql: `
SELECT v.${v.perspectiveName}, v.${v.backfillStreams}, v.${v.backfillEvents}::float8 AS ${v.backfillEvents},
       (SELECT count(*) FROM ${b.table} b WHERE b.${b.perspectiveName} = v.${v.perspectiveName})::int AS planned
FROM ${v.table} v WHERE v.${v.perspectiveName} = ANY($1::text[])`
})
