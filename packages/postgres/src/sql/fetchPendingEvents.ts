/**
 * The fetch of pending work (`PgWorkCoordinator.fetchPendingEvents`), and its parts the claim runs on the streams it
 * claims (`claimWork.claimAndFetch`). Its rows are {@link PendingRow}s, made pending events by `internal/pendingRows.ts`.
 */
import { Schema } from "effect"
import {
  ActiveStreams as a,
  Events as e,
  PerspectiveBackfill as b,
  PerspectiveCursors as c,
  PerspectiveEvents as pe,
  PerspectiveRows as m
} from "../internal/columns.js"
import * as Operation from "../internal/operation.js"
import { table } from "./perspectiveRows.js"

/**
 * One row of the fetch. Its fields are named as its columns (the registry's, and the statement's aliases), so the
 * rows are checked, never copied: a fetch returns thousands a cycle (`internal/operation.ts`, `decoder`).
 *
 * @category models
 * @since 0.5.0
 */
export const PendingRow = Schema.Struct({
  [pe.workId]: Schema.String,
  [pe.streamId]: Schema.String,
  [pe.perspectiveName]: Schema.String,
  [pe.eventId]: Schema.String,
  [pe.attempts]: Schema.Number,
  /** The pair's cursor as the fetch read it (null: none). */
  cursor_last_event_id: Schema.NullOr(Schema.String),
  /** False: work of a version not live at append, or replayed history (no PostPerspective receptors). */
  [pe.fires]: Schema.Boolean,
  blocked: Schema.Boolean,
  rewind_required: Schema.Boolean,
  /** This row carries its event's columns (null on the event's other rows). */
  event_first: Schema.Boolean,
  /** The pair has pending rows after this one that the fetch's background budget held back. */
  more: Schema.Boolean,
  [e.eventType]: Schema.NullOr(Schema.String),
  // The event's jsonb columns: decoded by the event registry and the perspectives, not here.
  [e.payload]: Schema.Unknown,
  [e.metadata]: Schema.Unknown,
  [e.scope]: Schema.Unknown,
  [e.streamVersion]: Schema.NullOr(Schema.Number),
  /** `[data]` on a pair's first row when models were asked for (null: no row); null otherwise. */
  model: Schema.NullOr(Schema.Array(Schema.Unknown))
})

/**
 * @category models
 * @since 0.5.0
 */
export type PendingRow = typeof PendingRow.Type

/** The `model` column: the pair's stored row, looked up on the pair's first row only, in its perspective's table. */
const modelColumn = (modelTables: ReadonlyArray<string> | undefined, names: string) =>
  modelTables === undefined || modelTables.length === 0
    ? "NULL::jsonb"
    : `CASE WHEN w.position = 1 THEN CASE w.${pe.perspectiveName} ${modelTables
        .map(
          (table, i) =>
            `WHEN (${names}::text[])[${i + 1}] THEN (SELECT jsonb_build_array(m.${m.data}) FROM ${table} m WHERE m.${m.id} = w.${pe.streamId})`
        )
        .join(" ")} END END`

/**
 * A statement text per set of perspectives whose models a fetch loads (none: `undefined`), built once.
 *
 * @internal
 */
export const textsPerModels = (build: (modelTables: ReadonlyArray<string> | undefined) => string) => {
  const texts = new Map<string, string>()
  return (modelsOf: ReadonlyArray<string> | undefined): string => {
    const key = modelsOf === undefined ? "" : modelsOf.join(",")
    const cached = texts.get(key)
    if (cached !== undefined) return cached
    const text = build(modelsOf?.map(table))
    texts.set(key, text)
    return text
  }
}

/**
 * The pending events of many streams in one query, for the instance's live leases only, at most $3 per
 * (stream, perspective), unordered: the coordinator puts them in (stream, perspective, event id) order
 * (`internal/pendingRows.ts`; an `ORDER BY` here was a quarter of the statement's time). Rows still in retry
 * backoff are returned flagged `blocked` so the worker stops that (stream, perspective) there instead of skipping
 * ahead.
 *
 * Late arrivals are detected here, in the same statement (invariant 4): a pending row whose event id is lower
 * than its cursor's `last_event_id` sets RewindRequired (32) on the cursor, keeps the lowest trigger id, stamps
 * `rewind_first_flagged_at` once (the debounce cap counts from it) and slides `rewind_flagged_at` to the latest
 * late row's append time (the sliding debounce window counts from it). Doing it at fetch time, against the
 * committed cursor, means no race between an append and a completion can hide a late event: whichever commits
 * first, the next fetch compares the two.
 *
 * Only a work row written by its event's own append (not later than the event: the append inserts both in one
 * transaction) marks a late arrival. A row added later for an event that was already there is a re-delivery of
 * work, left to the dedup cache as before. (An event written with an explicit, older `created_at` than its work
 * row would be taken for a re-delivery: the event store never does that.)
 *
 * A flagged (stream, perspective) — flagged before or by this statement — returns ONE row, its first, with
 * `rewind_required` true: the normal path must not apply it (the rewinder replays the stream instead). A pair
 * under a live stream lock (rewind, bootstrap, purge) returns nothing: application pauses until the release. So does
 * a pair whose perspective version still has the stream's history planned (`wh_perspective_backfill`): its live
 * work waits until the history is written as work, so both are applied in order.
 * The cursor update is skipped when it would change nothing, so a flagged pair waiting out its debounce window
 * does not rewrite its cursor at every poll. (`flagged` is never read: a data-modifying CTE always runs to completion.)
 *
 * Only the perspectives the instance runs are fetched ($4): work of another perspective is left for an instance that
 * runs it (a rolling deploy), never failed here.
 *
 * Each row carries its cursor's `last_event_id` as read by this statement (`cursor_last_event_id`, null without a
 * cursor): the completion commits only if the cursor is still there (see `completeWork.completeWork`), so a
 * purge, rewind or bootstrap that ran in between is never overwritten.
 *
 * Cost: the work rows are reached from the requested stream ids (`wanted`) through the (stream, perspective, event)
 * key, and the wanted streams' cursors through the cursor key, once per stream (filtering whole tables with
 * `= ANY($2)` costs a comparison per array element per row, and seq-scans the cursors, which grow with every stream
 * ever processed). Each (stream, perspective)'s cursor and backfill state is looked up once and joined with the
 * pair's rows, never once per row.
 * Only rows below their cursor are late-arrival candidates, so only they are compared with their event's append
 * time; every other row's late test is one comparison on the joined row.
 *
 * Each event's columns (type, payload, metadata, scope, version) come once per event (`event_first`), not once per
 * work row: an event handled by several perspectives is sent and parsed once, and the caller shares it between its
 * rows. Only those rows look the event up (the join key is null on the others, and a null key finds nothing).
 *
 * Models with the fetch (`modelTables`, the quoted read-model tables of $4's perspectives, in $4's order): the
 * first row of each (stream, perspective) also carries the pair's stored read-model row as `model`, a one-element
 * JSON array `[data]` (null: no row yet), read in the same snapshot as the cursor it is applied after — one round
 * trip instead of one more per perspective. Without `modelTables` the column is null.
 *
 * Background work yields to live work ($5): rows that fire no receptors (`fires` false: a building version's history
 * and the new events routed to it) count against a budget of $5 rows for the whole fetch, spent on whole
 * (stream, perspective) prefixes in (stream, perspective, event) order; a pair stops at its first row over the
 * budget, and its rows say so (`more`; a pair cut at its first row returns nothing and is claimed again). Live
 * work is never held back, so a rebuild's history cannot make a cycle long enough to delay the live version's
 * events behind it (the cycle's completion is what a read-your-writes wait waits for).
 *
 * Params: $1 instance id, $2 stream ids, $3 limit per (stream, perspective), $4 perspective names (null: all;
 * required with `modelTables`), $5 most rows of background work.
 *
 * @category operations
 * @since 0.5.0
 */
export const fetchPendingEventsSql = (modelTables?: ReadonlyArray<string>): string => {
  const parts = fetchParts(modelTables, {
    wanted: `SELECT DISTINCT s.id AS ${a.streamId} FROM unnest($2::uuid[]) AS s(id)`,
    leased: true,
    limit: "$3",
    names: "$4",
    background: "$5"
  })
  return `WITH ${parts.ctes}${parts.rows}`
}

const fetchText = textsPerModels(fetchPendingEventsSql)

/**
 * {@link fetchPendingEventsSql} as an operation: `modelsOf`, the perspectives whose models it loads (the same as
 * `perspectiveNames`, or none), picks the statement text.
 *
 * @category operations
 * @since 0.5.0
 */
export const fetchPendingEvents = Operation.findAll({
  name: "fetchPendingEvents.fetchPendingEvents",
  Row: PendingRow,
  params: (r: {
    readonly instanceId: string
    readonly streamIds: ReadonlyArray<string>
    readonly limit: number
    readonly perspectiveNames: ReadonlyArray<string> | null
    readonly backgroundLimit: number
    readonly modelsOf: ReadonlyArray<string> | undefined
  }) => [r.instanceId, r.streamIds, r.limit, r.perspectiveNames, r.backgroundLimit],
  sql: (r) => fetchText(r.modelsOf),
  prepared: true
})

/**
 * Where a fetch's parts take their inputs: `wanted` the streams (a query of `stream_id`), `leased` whether each
 * must hold a live lease of instance $1 (false: the caller just claimed them in the same statement), and the
 * parameters of the per-pair limit, the perspective names and the background budget.
 */
interface FetchInputs {
  readonly wanted: string
  readonly leased: boolean
  readonly limit: string
  readonly names: string
  readonly background: string
}

/** The CTEs that find the wanted streams' cursors and work rows, and what each (stream, perspective) needs. */
const lookupCtes = (inputs: FetchInputs): string => `
wanted AS (
  ${inputs.wanted}
),
-- The wanted streams' cursors, by stream on the cursor key, once per fetch (at most one per stream and perspective).
-- Joined in place, a plan made while the cursors table was empty or never analysed (a new service; the plan is
-- cached for the connection until autovacuum analyses the table) hashed the whole table once per wanted stream:
-- with 10,000 cursors a claim of 300 streams took 464-480 ms instead of 58-60 (bench/src/claimAndFetchPlan.ts).
cursors AS MATERIALIZED (
  SELECT c.${c.streamId}, c.${c.perspectiveName}, c.${c.lastEventId}, c.${c.status}, c.${c.streamLockInstanceId}, c.${c.streamLockExpiry}
  FROM wanted w
  CROSS JOIN LATERAL (
    SELECT c.* FROM ${c.table} c
    WHERE c.${c.streamId} = w.${a.streamId} AND (${inputs.names}::text[] IS NULL OR c.${c.perspectiveName} = ANY(${inputs.names}::text[]))
    OFFSET 0
  ) c
),
-- The wanted streams' work rows, on their own: joined with the cursors inside the per-stream lookup, the cursors CTE
-- was read whole once per wanted stream (300 x 600 rows for a claim of 300 streams whose pairs all have cursors).
work AS MATERIALIZED (
  SELECT pe.${pe.workId}, pe.${pe.streamId}, pe.${pe.perspectiveName}, pe.${pe.eventId}, pe.${pe.attempts}, pe.${pe.scheduledFor}, pe.${pe.createdAt}, pe.${pe.fires}
  FROM wanted w
  ${inputs.leased ? `JOIN ${a.table} a ON a.${a.streamId} = w.${a.streamId} AND a.${a.instanceId} = $1::uuid AND a.${a.leaseExpiry} > now()` : ""}
  -- Each wanted stream's work rows are looked up by stream (the (stream, perspective, event) key): the fetch costs
  -- what it returns, never a scan of the queue, whose deleted rows stay until VACUUM. OFFSET 0 keeps the planner
  -- from flattening the lookup into a join, which PostgreSQL 17 ran as a hash join over a sequential scan of the
  -- whole work table for 300 streams.
  CROSS JOIN LATERAL (
    SELECT pe.* FROM ${pe.table} pe
    WHERE pe.${pe.streamId} = w.${a.streamId} AND pe.${pe.processedAt} IS NULL
      AND (${inputs.names}::text[] IS NULL OR pe.${pe.perspectiveName} = ANY(${inputs.names}::text[]))
    OFFSET 0
  ) pe
),
-- What the fetch needs of each (stream, perspective) — its cursor and whether its version's history is still planned
-- (wh_perspective_backfill) — once per pair, then joined with the pair's work rows. Tested once per work row, the
-- backfill lookup ran 6,000 times for a claim of 300 streams of 10 events and 2 perspectives (a fifth of the claim's
-- time on PostgreSQL 15 while that table was empty and analysed).
pairs AS MATERIALIZED (
  SELECT p.${pe.streamId}, p.${pe.perspectiveName}, c.${c.lastEventId}, c.${c.status}, c.${c.streamLockInstanceId}, c.${c.streamLockExpiry},
         EXISTS (SELECT 1 FROM ${b.table} b WHERE b.${b.perspectiveName} = p.${pe.perspectiveName} AND b.${b.streamId} = p.${pe.streamId})
           AS backfilling
  FROM (SELECT DISTINCT w.${pe.streamId}, w.${pe.perspectiveName} FROM work w) p
  LEFT JOIN cursors c ON c.${c.streamId} = p.${pe.streamId} AND c.${c.perspectiveName} = p.${pe.perspectiveName}
)`

/** The CTEs that number each pair's rows and detect, flag and mark late arrivals (invariant 4). */
const lateArrivalCtes = `pending AS (
  SELECT pe.${pe.workId}, pe.${pe.streamId}, pe.${pe.perspectiveName}, pe.${pe.eventId}, pe.${pe.attempts}, pe.${pe.scheduledFor}, pe.${pe.createdAt},
         row_number() OVER (PARTITION BY pe.${pe.streamId}, pe.${pe.perspectiveName} ORDER BY pe.${pe.eventId}) AS position,
         c.${c.lastEventId} AS cursor_last_event_id,
         coalesce(c.${c.status} & 32 = 32, false) AS flagged_before,
         coalesce(c.${c.streamLockInstanceId} IS NOT NULL AND c.${c.streamLockExpiry} > statement_timestamp(), false) OR c.backfilling
           AS locked,
         pe.${pe.fires}
  FROM work pe
  JOIN pairs c ON c.${pe.streamId} = pe.${pe.streamId} AND c.${pe.perspectiveName} = pe.${pe.perspectiveName}
),
late AS (
  SELECT p.${pe.streamId}, p.${pe.perspectiveName}, (array_agg(p.${pe.eventId} ORDER BY p.${pe.eventId}))[1] AS trigger_id, max(p.${pe.createdAt}) AS arrived_at,
         now() AS at
  FROM pending p
  -- By primary key for each candidate row (as above: never a scan of every stored event).
  CROSS JOIN LATERAL (SELECT e.${e.createdAt} FROM ${e.table} e WHERE e.${e.eventId} = p.${pe.eventId} OFFSET 0) e
  WHERE p.cursor_last_event_id IS NOT NULL AND p.${pe.eventId} < p.cursor_last_event_id AND p.${pe.createdAt} <= e.${e.createdAt}
  GROUP BY p.${pe.streamId}, p.${pe.perspectiveName}
),
flagged AS (
  UPDATE ${c.table} c
  SET ${c.status} = c.${c.status} | 32,
      ${c.rewindTriggerEventId} = CASE WHEN c.${c.status} & 32 = 32 THEN least(c.${c.rewindTriggerEventId}, l.trigger_id) ELSE l.trigger_id END,
      -- l.at, not now(): Citus refuses now() inside CASE and COALESCE in a modification.
      ${c.rewindFirstFlaggedAt} = CASE WHEN c.${c.status} & 32 = 32 THEN coalesce(c.${c.rewindFirstFlaggedAt}, l.at) ELSE l.at END,
      ${c.rewindFlaggedAt} = CASE WHEN c.${c.status} & 32 = 32 THEN greatest(c.${c.rewindFlaggedAt}, l.arrived_at) ELSE l.arrived_at END
  FROM late l
  WHERE c.${c.streamId} = l.${pe.streamId} AND c.${c.perspectiveName} = l.${pe.perspectiveName}
    AND (c.${c.status} & 32 = 0 OR c.${c.rewindTriggerEventId} IS NULL OR l.trigger_id < c.${c.rewindTriggerEventId}
      OR c.${c.rewindFlaggedAt} IS NULL OR l.arrived_at > c.${c.rewindFlaggedAt})
  RETURNING c.${c.streamId}
),
marked AS (
  SELECT p.*, (p.flagged_before OR (p.${pe.streamId}, p.${pe.perspectiveName}) IN (SELECT l.${pe.streamId}, l.${pe.perspectiveName} FROM late l)) AS rewind_required
  FROM pending p
)`

/** The CTEs that keep what the fetch returns: the per-pair limit, the background budget, each event's first row. */
const budgetCtes = (inputs: FetchInputs): string => `candidates AS (
  SELECT m.*,
         sum(CASE WHEN m.${pe.fires} OR m.rewind_required THEN 0 ELSE 1 END)
           OVER (ORDER BY m.${pe.streamId}, m.${pe.perspectiveName}, m.${pe.eventId} ROWS UNBOUNDED PRECEDING) AS background_seen
  FROM marked m
  WHERE (m.rewind_required AND m.position = 1)
     OR (NOT m.rewind_required AND NOT m.locked AND m.position <= ${inputs.limit}::int)
),
admitted AS (
  SELECT c.*,
         bool_and(c.${pe.fires} OR c.background_seen <= ${inputs.background}::int)
           OVER (PARTITION BY c.${pe.streamId}, c.${pe.perspectiveName} ORDER BY c.${pe.eventId} ROWS UNBOUNDED PRECEDING) AS admitted,
         bool_and(c.${pe.fires} OR c.background_seen <= ${inputs.background}::int) OVER (PARTITION BY c.${pe.streamId}, c.${pe.perspectiveName}) AS whole
  FROM candidates c
),
chosen AS (
  SELECT a.*, row_number() OVER (PARTITION BY a.${pe.eventId}) = 1 AS event_first
  FROM admitted a
  WHERE a.admitted
)`

/** The query of the fetch's rows, each event's columns on its first row only. */
const rowsQuery = (modelTables: ReadonlyArray<string> | undefined, inputs: FetchInputs): string => `
SELECT w.${pe.workId}, w.${pe.streamId}, w.${pe.perspectiveName}, w.${pe.eventId}, w.${pe.attempts}, w.cursor_last_event_id, w.${pe.fires},
       (w.${pe.scheduledFor} IS NOT NULL AND w.${pe.scheduledFor} > now()) AS blocked, w.rewind_required, w.event_first,
       NOT w.whole AS more,
       e.${e.eventType}, e.${e.payload}, e.${e.metadata}, e.${e.scope}, e.${e.streamVersion}::int AS ${e.streamVersion},
       ${modelColumn(modelTables, inputs.names)} AS model
FROM chosen w
LEFT JOIN ${e.table} e ON e.${e.eventId} = CASE WHEN w.event_first THEN w.${pe.eventId} END`

/**
 * The fetch as parts a claim can run on what it claimed (`claimWork.claimAndFetch`): its CTEs (without the leading
 * WITH) and the query of its rows (unordered).
 */
export const fetchParts = (
  modelTables: ReadonlyArray<string> | undefined,
  inputs: FetchInputs
): { readonly ctes: string; readonly rows: string } => ({
  ctes: `${lookupCtes(inputs)},\n${lateArrivalCtes},\n${budgetCtes(inputs)}`,
  rows: rowsQuery(modelTables, inputs)
})
