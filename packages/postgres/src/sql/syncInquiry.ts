/**
 * The statements of the read-your-writes inquiry (`@whizbang/sync`'s `PgSyncInquiry`): what the database knows about
 * whether a perspective processed some events, and the rule that reads it. Every value is a bound parameter; table
 * names are written unqualified and qualified with the view's schema when they run (`PgClient.QueryOptions.qualified`).
 *
 * Every statement answers for the SERVING versions of a perspective's base name, resolved in the statement itself
 * (so a check is atomic with respect to a state change such as a cutover): the registered versions in state
 * 'live' or 'ready'; when the base has none of those (no registry rows: in-memory, not registered yet), the key
 * that was asked for, which counts as done for every event when it is registered as 'retired'.
 *
 * `eventFacts` gathers, per (serving key, asked event id), what the rule ({@link verdict}) needs, through `wh_event_facts`
 * (migrations 0015 and 0017): one probe by key per lookup, planned once per connection. It is the hot statement of
 * a wait (the bench's scenario c runs it for every first check): a named prepared statement, and its rows decoded
 * by a struct of plain fields (see {@link EventFacts}).
 */
import { Effect, Exit, Schema } from "effect"
import * as CoalescingQueue from "../internal/coalescingQueue.js"
import { Events as e, DeadLetters as d, PerspectiveEvents as w, PerspectiveVersions as v } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"
import type { Shape as Client } from "../PgClient.js"
import type { PostgresError } from "../PostgresError.js"

/**
 * The channel the completion and dead-letter transactions notify (`<schema>`, or `<schema>\n` and lines of
 * `<perspective>\t<id>,<id>` naming the committed events; `@versions\t<base>:<1|0>` lines for the registry's changes).
 *
 * @category constants
 * @since 0.5.0
 */
export const processedChannel = "wh_processed"

/** Params: $1 base name, $2 the key asked for. Columns: key, event_types (null: not registered), retired. */
const serving = `
serving AS (
  SELECT s.${v.perspectiveName} AS key, s.${v.eventTypes}, false AS retired
  FROM ${v.table} s
  WHERE s.${v.baseName} = $1 AND s.${v.state} IN ('live', 'ready')
  UNION ALL
  SELECT $2::text, r.${v.eventTypes}, coalesce(r.${v.state} = 'retired', false)
  FROM (SELECT 1) AS one
  LEFT JOIN ${v.table} r ON r.${v.perspectiveName} = $2::text
  WHERE NOT EXISTS (SELECT 1 FROM ${v.table} s WHERE s.${v.baseName} = $1 AND s.${v.state} IN ('live', 'ready'))
)`

/**
 * What the database knows about one asked event for one serving key (a row of `wh_event_facts`).
 *
 * @category models
 * @since 0.5.0
 */
export const EventFacts = Schema.Struct({
  /** The serving key these facts are about. */
  key: Schema.String,
  /** The key's event types from the version registry; null when the key is not registered. */
  eventTypes: Schema.NullOr(Schema.Array(Schema.String)),
  retired: Schema.Boolean,
  eventId: Schema.String,
  eventType: Schema.NullOr(Schema.String),
  committed: Schema.Boolean,
  hasWork: Schema.Boolean,
  workProcessed: Schema.Boolean,
  deadLettered: Schema.Boolean,
  cursorPast: Schema.Boolean,
  /** The event's stream (null when not committed). */
  streamId: Schema.NullOr(Schema.String),
  /** While the event waits in the key's queue: the stream's first unprocessed event there, when its last attempt failed. */
  failingEventId: Schema.NullOr(Schema.String),
  failingError: Schema.NullOr(Schema.String),
  failingAttempts: Schema.NullOr(Schema.Number),
  failingNextAttemptAt: Schema.NullOr(Schema.Date)
})

/**
 * @category models
 * @since 0.5.0
 */
export type EventFacts = typeof EventFacts.Type

/**
 * A question about some events of one perspective: its base name, the key asked for (the base name or a version's
 * key) and the event ids (UUIDs).
 *
 * @category models
 * @since 0.5.0
 */
export interface FactsRequest {
  readonly baseName: string
  readonly key: string
  readonly eventIds: ReadonlyArray<string>
}

/**
 * One row per serving key and asked id; the `failing*` fields (migration 0017) name the stream's failing head in the
 * key's queue while the event waits there.
 *
 * @category operations
 * @since 0.5.0
 */
export const eventFacts = Operation.findAll({
  name: "syncInquiry.eventFacts",
  Row: EventFacts,
  columns: {
    eventTypes: "event_types",
    eventId: "event_id",
    eventType: "event_type",
    hasWork: "has_work",
    workProcessed: "work_processed",
    deadLettered: "dead_lettered",
    cursorPast: "cursor_past",
    streamId: "stream_id",
    failingEventId: "failing_event_id",
    failingError: "failing_error",
    failingAttempts: "failing_attempts",
    failingNextAttemptAt: "failing_next_attempt_at"
  },
  params: (r: FactsRequest) => [r.baseName, r.key, r.eventIds],
  prepared: true,
  sql: `
SELECT key, event_types, retired, event_id, event_type, committed, has_work, work_processed, dead_lettered, cursor_past,
       stream_id, failing_event_id, failing_error, failing_attempts, failing_next_attempt_at
FROM wh_event_facts($1, $2, $3::uuid[])`
})

/**
 * A verdict of the rule: whether a perspective processed an event.
 *
 * @category models
 * @since 0.5.0
 */
export type Verdict = "pending" | "processed" | "deadLettered" | "failing"

/**
 * The rule that decides, from the database alone, whether perspective P has processed event E — correct after
 * the worker deleted E's work row. Facts: the append writes E and one work row per perspective handling E's type in
 * ONE transaction; the completion deletes exactly the applied work rows and advances the (stream, P) cursor in ONE
 * transaction; failures that exhaust their attempts move the row to `wh_dead_letters` in one transaction. So:
 *
 * 1. E not in `wh_events`: **pending** — not committed yet (or no such event). Never done unless the database agrees.
 * 2. A work row for (E, P) exists: **pending** while `processed_at` is null — **failing** when the first unprocessed
 *    row of E's stream for P (E itself or an earlier event, which holds E: the worker applies a stream in order and
 *    stops it at its failing event) failed its last attempt; **processed** once `processed_at` is set (debug mode keeps rows).
 * 3. No work row, a dead letter for (E, P): **dead-lettered** — not pending, but the read model lacks E.
 * 4. No work row, P does not handle E's type: **processed** — no work row ever existed, there is nothing to apply.
 * 5. No work row, the (stream, P) cursor's `last_event_id >= E` (UUIDv7 order): **processed** — the deletion and
 *    the cursor advance committed together.
 * 6. Otherwise (no work row, no dead letter, the cursor not past E): **pending** — the row vanished without the
 *    cursor vouching for E (deleted by hand, perspective added after E was appended): we cannot prove E applied.
 *
 * With versions, P stands for every SERVING version of P's base name: the facts come per (serving key, E) and
 * {@link combine} joins them. A retired key (asked for when nothing serves) counts as done for every committed
 * event: it is no longer processed. `handlesType` answers for a key the registry does not know (`eventTypes` null).
 *
 * @category rules
 * @since 0.5.0
 */
export const verdict = (facts: EventFacts, handlesType: (eventType: string) => boolean): Verdict => {
  if (!facts.committed || facts.eventType === null) return "pending"
  if (facts.retired) return "processed"
  if (facts.hasWork) return facts.workProcessed ? "processed" : facts.failingEventId !== null ? "failing" : "pending"
  if (facts.deadLettered) return "deadLettered"
  if (!(facts.eventTypes !== null ? facts.eventTypes.includes(facts.eventType) : handlesType(facts.eventType))) return "processed"
  return facts.cursorPast ? "processed" : "pending"
}

/**
 * One event's verdict over every serving key (`verdicts` non-empty): dead-lettered if any key dead-lettered it,
 * failing if any key is failing at it, pending if any key has it pending, processed only if every key processed it.
 *
 * @category rules
 * @since 0.5.0
 */
export const combine = (verdicts: Iterable<Verdict>): Verdict => {
  let out: Verdict = "processed"
  for (const v of verdicts) {
    if (v === "deadLettered") return v
    if (v === "failing" || (v === "pending" && out === "processed")) out = v
  }
  return out
}

/**
 * {@link eventFacts} for many callers at once (the first checks and safety-net polls of many waits): a question
 * that finds no statement of this batcher running runs at once; those that arrive while one runs wait for it and
 * then go together, one statement per (base name, key) for the union of their ids, each answered with the rows of
 * its own ids. So concurrent waits do not flood the pool, with no timer and no window (`coalescingQueue`).
 *
 * @category constructors
 * @since 0.5.0
 */
export const batchedEventFacts = (client: Client): ((request: FactsRequest) => Effect.Effect<ReadonlyArray<EventFacts>, PostgresError>) =>
  CoalescingQueue.make<FactsRequest, ReadonlyArray<EventFacts>, PostgresError>({
    maxInFlight: 1,
    maxBatch: Number.POSITIVE_INFINITY,
    one: (request) => eventFacts(client, request),
    many: (requests) => {
      const byKey = new Map<string, Array<FactsRequest>>()
      for (const r of requests) {
        const group = `${r.baseName}\t${r.key}`
        const list = byKey.get(group)
        if (list === undefined) byKey.set(group, [r])
        else list.push(r)
      }
      const answers = new Map<FactsRequest, Exit.Exit<ReadonlyArray<EventFacts>, PostgresError>>()
      return Effect.map(
        Effect.forEach(
          byKey.values(),
          (group) =>
            Effect.map(
              Effect.exit(eventFacts(client, { ...group[0]!, eventIds: [...new Set(group.flatMap((r) => r.eventIds))] })),
              (exit) => {
                for (const r of group) {
                  const mine = new Set(r.eventIds)
                  answers.set(
                    r,
                    Exit.map(exit, (rows) => rows.filter((row) => mine.has(row.eventId)))
                  )
                }
              }
            ),
          { concurrency: "unbounded", discard: true }
        ),
        () => requests.map((r) => answers.get(r)!)
      )
    }
  })

/**
 * A stream's pending event found by discovery.
 *
 * @category models
 * @since 0.5.0
 */
export const Pending = Schema.Struct({ eventId: Schema.String })

/**
 * Cross-scope discovery of one stream: its committed events still waiting in the work queue of any serving version
 * (a retired key waits for nothing), of some types (none: every type), in event-id order; with `deadLettered`, also
 * its events still in the serving versions' dead letters (neither retried nor discarded: the read model lacks them).
 * The stream is a plain condition, so even a generic plan probes the work rows' (stream_id, perspective_name,
 * event_id) key and the dead letters' index: written as `$3 IS NULL OR stream_id = $3` (one statement for both kinds
 * of discovery), the generic plan scanned the whole work queue (2.0 of 2.3 ms with 8,000 work rows).
 *
 * @category operations
 * @since 0.5.0
 */
export const pendingEventsOfStream = Operation.findAll({
  name: "syncInquiry.pendingEventsOfStream",
  Row: Pending,
  columns: { eventId: "event_id" },
  params: (r: {
    readonly baseName: string
    readonly key: string
    readonly streamId: string
    readonly eventTypes: ReadonlyArray<string>
    readonly limit: number
    readonly deadLettered: boolean
  }) => [r.baseName, r.key, r.streamId, r.eventTypes, r.limit, r.deadLettered],
  prepared: true,
  sql: `
WITH ${serving}
SELECT found.${w.eventId}::text AS event_id
FROM (
  SELECT pe.${w.eventId}
  FROM ${w.table} pe
  JOIN ${e.table} e ON e.${e.eventId} = pe.${w.eventId}
  WHERE pe.${w.streamId} = $3::uuid
    AND pe.${w.perspectiveName} = ANY (ARRAY(SELECT s.key FROM serving s WHERE NOT s.retired))
    AND pe.${w.processedAt} IS NULL
    AND (cardinality($4::text[]) = 0 OR e.${e.eventType} = ANY($4::text[]))
  UNION
  SELECT dl.${d.eventId}
  FROM ${d.table} dl
  WHERE $6::boolean AND dl.${d.streamId} = $3::uuid
    AND dl.${d.perspectiveName} = ANY (ARRAY(SELECT s.key FROM serving s WHERE NOT s.retired))
    AND (cardinality($4::text[]) = 0 OR dl.${d.eventType} = ANY($4::text[]))
) found
ORDER BY found.${w.eventId}
LIMIT $5`
})

/**
 * Cross-scope discovery over every stream (event types alone, `all()`, the inquiry without a stream): the committed
 * events still waiting in the work queue of any serving version, of some types (none: every type), in event-id
 * order. Broad: it reads the perspective's whole queue.
 *
 * @category operations
 * @since 0.5.0
 */
export const pendingEvents = Operation.findAll({
  name: "syncInquiry.pendingEvents",
  Row: Pending,
  columns: { eventId: "event_id" },
  params: (r: { readonly baseName: string; readonly key: string; readonly eventTypes: ReadonlyArray<string>; readonly limit: number }) => [
    r.baseName,
    r.key,
    r.eventTypes,
    r.limit
  ],
  prepared: true,
  sql: `
WITH ${serving}
SELECT pe.${w.eventId}::text AS event_id
FROM ${w.table} pe
JOIN ${e.table} e ON e.${e.eventId} = pe.${w.eventId}
WHERE pe.${w.perspectiveName} = ANY (ARRAY(SELECT s.key FROM serving s WHERE NOT s.retired))
  AND pe.${w.processedAt} IS NULL
  AND (cardinality($3::text[]) = 0 OR e.${e.eventType} = ANY($3::text[]))
GROUP BY pe.${w.eventId}
ORDER BY pe.${w.eventId}
LIMIT $4`
})

/**
 * Per base name with registry rows: whether the base key alone serves it (`balance` live, no other version `live`
 * or `ready`); only then may a completion's payload for `balance` settle a wait for `balance` without a query.
 *
 * @category operations
 * @since 0.5.0
 */
export const servedAlone = Operation.findAll({
  name: "syncInquiry.servedAlone",
  Row: Schema.Struct({ baseName: Schema.String, alone: Schema.Boolean }),
  columns: { baseName: v.baseName },
  sql: `
SELECT ${v.baseName},
       count(*) FILTER (WHERE ${v.state} IN ('live', 'ready')) > 0
         AND coalesce(bool_and(${v.perspectiveName} = ${v.baseName}) FILTER (WHERE ${v.state} IN ('live', 'ready')), false) AS alone
FROM ${v.table}
GROUP BY ${v.baseName}`
})
