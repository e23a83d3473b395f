/**
 * The database sync inquiry: which events a perspective has processed, answered from Postgres, and the
 * {@link SyncInquiryPort} that awaiters use for the cross-instance path, woken by `NOTIFY`.
 *
 * - `classify(perspective, eventIds)`: each id is pending, processed or dead-lettered by the rule below — it
 *   stays correct after the worker deleted the work rows, and an event the database does not know is pending; of
 *   the pending ones, those held by a failing event (its stream's head in retry backoff) are named in `failing`.
 * - `pendingForStream(perspective, stream, eventTypes, { deadLettered })`: cross-scope discovery of a stream's
 *   pending events (and, when asked, of its events still in dead letters); of every stream without one.
 * - `inquire(SyncInquiry)`: the reference's inquiry/result model (`SyncInquiry.isFullySynced` reads it).
 *
 * **The rule** (P = perspective, E = event): pending when E is not committed, or its work row for P exists
 * unprocessed; processed when its work row is marked processed (debug mode), or — no work row — P does not
 * handle E's type, or the (stream, P) cursor's `last_event_id >= E`; dead-lettered when — no work row — a dead
 * letter for (E, P) exists; otherwise pending (the database cannot vouch for E). A pending E whose stream's first
 * unprocessed work row for P failed its last attempt is failing: held until a retry of that row succeeds. Why this is enough: the append
 * writes E and its work rows in one transaction, and the completion deletes exactly the applied rows and
 * advances the cursor in one transaction. The statements and the rule are `PgOperations.SyncInquiry` of
 * `@whizbang/postgres` (the facts decoded, the rule beside the statement that gathers them).
 *
 * **Perspective versions**: a perspective name is its base name or any version's key, and both mean every
 * SERVING version of the base (`live` and `ready` in `wh_perspective_versions`), resolved in the same statement as
 * the facts, so a check is atomic with respect to a cutover; the rule above runs per serving key (a registered
 * key's `event_types` say what it handles) and an event is processed only when every serving key processed it
 * (dead-lettered if any dead-lettered it). A base without registry rows is served by the name asked for. A
 * completion's payload names one key: it settles the waits it names by itself only while that key is the base
 * name and alone serves it — known from the registry and kept current by the registry's own notifications on the
 * same channel, in commit order (`internal/servingVersions.ts`); otherwise it re-checks exactly those waits in the
 * database. Bases ever seen served by versions are remembered (per process): for them the tracker's marks are not
 * trusted without the database.
 *
 * **Wake-ups**: the layer holds one LISTEN connection on `wh_processed`, which `PgWorkCoordinator` notifies in
 * every completion (payload: the schema, then the committed events per perspective) and dead-letter transaction
 * (the schema alone). With a `SyncEventTracker` in context (as `Whizbang.layer` and `layerWithoutWorker` compose
 * it), each payload also marks the events it names processed for the key it names, so the tracker of a process
 * whose worker runs elsewhere holds only what is still in flight. Waits are parked on it: a notification that
 * names a parked wait's event settles it without a query, and a notification without detail runs one sweep (one
 * query per perspective for every parked wait); a wait that nothing settles is never woken. A 1 s safety-net poll
 * remains.
 *
 * ```ts
 * const SyncLive = Layer.mergeAll(PerspectiveSyncAwaiter.layer, EventCompletionAwaiter.layer).pipe(
 *   Layer.provide(PgSyncInquiry.layer({ perspectives })),
 *   Layer.provideMerge(SyncEventTracker.layer)
 * )
 * ```
 *
 * **Gotchas**: a database error during a wait is logged and the events stay pending (the next signal or poll
 * asks again), so an outage ends in `TimedOut`, never in a false `Synced`.
 *
 * @since 0.1.0
 */
import { EventId, Perspective } from "@whizbang/core"
import { PgClient, type PostgresError as PgError, SchemaReady } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Context, Effect, Layer } from "effect"
import { ParkedWaits } from "./internal/parkedWaits.js"
import type { ChangeSignal } from "./internal/processedListener.js"
import * as ProcessedListener from "./internal/processedListener.js"
import { noticeKey, ServingVersions } from "./internal/servingVersions.js"
import { SyncEventTracker } from "./SyncEventTracker.js"
import * as SyncInquiry from "./SyncInquiry.js"
import { type DiscoveryOptions, type HeldEvent, SyncInquiryPort, type SyncInquiryPortShape } from "./SyncInquiryPort.js"

const Sql = PgOperations.SyncInquiry

type PostgresError = PgError.PostgresError

/**
 * What the inquiry must know about the service's perspectives: which event types each handles.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  readonly perspectives: ReadonlyArray<{ readonly name: string; readonly eventTypes: ReadonlyArray<string> }>
  /** At most this many ids from cross-scope discovery. Default 10,000. */
  readonly discoveryLimit?: number | undefined
}

/**
 * Ids split by verdict.
 *
 * @category models
 * @since 0.1.0
 */
export interface Classified {
  readonly pending: ReadonlyArray<string>
  readonly processed: ReadonlyArray<string>
  readonly deadLettered: ReadonlyArray<string>
  /** Of `pending`, the events held by a failing event (in retry backoff), with that event's failure. */
  readonly failing: ReadonlyArray<HeldEvent>
}

/**
 * The inquiry's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  readonly classify: (perspectiveName: string, eventIds: ReadonlyArray<string>) => Effect.Effect<Classified, PostgresError>
  readonly pendingForStream: (
    perspectiveName: string,
    streamId: string | undefined,
    eventTypes?: ReadonlyArray<string>,
    options?: DiscoveryOptions
  ) => Effect.Effect<ReadonlyArray<string>, PostgresError>
  readonly inquire: (inquiry: SyncInquiry.SyncInquiry) => Effect.Effect<SyncInquiry.SyncInquiryResult, PostgresError>
  /** The port awaiters use (what {@link layer} provides as `SyncInquiryPort`). */
  readonly port: SyncInquiryPortShape
  /** How many waits are parked on notifications now, and how many sweeps ran so far (diagnostics and tests). */
  readonly parkedWaits: Effect.Effect<{ readonly parked: number; readonly sweeps: number }>
}

/**
 * The inquiry service.
 *
 * @category services
 * @since 0.1.0
 */
export class PgSyncInquiry extends Context.Service<PgSyncInquiry, Shape>()("@whizbang/sync/PgSyncInquiry") {}

/** `inquire`, answered by `classify` when the inquiry names events, else by discovery. */
const inquireWith = (classify: Shape["classify"], pendingForStream: Shape["pendingForStream"]) => (inquiry: SyncInquiry.SyncInquiry) =>
  Effect.gen(function* () {
    if (inquiry.eventIds !== undefined && inquiry.eventIds.length > 0) {
      const c = yield* classify(inquiry.perspectiveName, inquiry.eventIds)
      return SyncInquiry.resultFor(inquiry, {
        pendingCount: c.pending.length,
        processedCount: c.processed.length,
        pendingEventIds: inquiry.includePendingEventIds === true ? c.pending : undefined,
        // Only when asked (the reference's default is off); without them `isFullySynced` cannot say "synced".
        processedEventIds: inquiry.includeProcessedEventIds === true ? c.processed : undefined,
        deadLetteredEventIds: c.deadLettered
      })
    }
    const pending = yield* pendingForStream(inquiry.perspectiveName, inquiry.streamId, inquiry.eventTypeFilter)
    return SyncInquiry.resultFor(inquiry, {
      pendingCount: pending.length,
      processedCount: 0,
      pendingEventIds: inquiry.includePendingEventIds === true || inquiry.discoverPendingFromOutbox === true ? pending : undefined
    })
  })

/**
 * Makes the inquiry and starts its LISTEN connection in the current scope.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function* (options: Options) {
  const client = yield* PgClient.PgClient
  const handled = new Map<string, Set<string>>(options.perspectives.map((p) => [p.name, new Set(p.eventTypes)]))
  const limit = options.discoveryLimit ?? 10_000
  const signal = new ProcessedListener.ChangeSignal()
  const tracker = yield* Effect.serviceOption(SyncEventTracker)
  // What a completion committed, wherever its worker ran, is no longer pending for this process's tracker.
  const markTracked = (processed: ProcessedListener.Processed): Effect.Effect<void> =>
    processed === undefined || tracker._tag === "None"
      ? Effect.void
      : Effect.forEach(
          // The registry's lines carry version changes, not events.
          [...processed].filter(([key]) => key !== noticeKey),
          ([key, ids]) => tracker.value.markProcessedByPerspective(ids, key),
          { discard: true }
        )

  // Bases ever seen served by more than one key, or by a key other than the base name (sticky for the process):
  // for them a completion's payload (which names one key) cannot settle a wait, nor can the tracker's mark.
  const versioned = new Set<string>()
  const classify = classifyWith(handled, versioned, (request) => Sql.eventFacts(client, request))
  // First checks and safety-net polls of many waits: asks that arrive while a query runs are answered together by
  // the next one (per perspective), so concurrent waits do not flood the pool.
  const classifyBatched = classifyWith(handled, versioned, Sql.batchedEventFacts(client))
  const pendingForStream = pendingForStreamWith(client, limit)

  // One sweep per notification for every wait parked on the database (only the waits it settles wake). A payload
  // settles a wait by itself only for a base its own key alone serves, as the registry says at that moment.
  const serving = new ServingVersions(client)
  const parked = new ParkedWaits(signal, classify, (baseName, key) => key === baseName && serving.alone(baseName))
  yield* serving.start(yield* Effect.scope)
  yield* parked.start(yield* Effect.scope)
  yield* ProcessedListener.start(signal, (processed) =>
    Effect.andThen(
      markTracked(processed),
      Effect.sync(() => {
        serving.notice(processed)
        parked.notice(processed)
      })
    )
  )

  return PgSyncInquiry.of({
    classify,
    pendingForStream,
    inquire: inquireWith(classify, pendingForStream),
    port: portOf({ handled, versioned, classifyBatched, pendingForStream, signal, parked }),
    parkedWaits: Effect.sync(() => ({ parked: parked.size, sweeps: parked.sweeps }))
  })
})

/**
 * The inquiry service and, from it, the `SyncInquiryPort` for awaiters (after the schema is migrated).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<PgSyncInquiry, never, PgClient.PgClient | SchemaReady.SchemaReady> =>
  Layer.effectContext(
    Effect.gen(function* () {
      yield* SchemaReady.SchemaReady
      const inquiry = yield* make(options)
      return Context.make(PgSyncInquiry, inquiry).pipe(Context.add(SyncInquiryPort, inquiry.port))
    })
  )

/**
 * The verdicts of a `classify`: the facts the database gathers about each event, per serving key of the perspective,
 * judged by the rule of `PgOperations.SyncInquiry` (see `PgSyncInquiry.ts`) and combined across the keys.
 *
 * @internal
 */
type Verdict = PgOperations.SyncInquiry.Verdict
type Facts = PgOperations.SyncInquiry.EventFacts

/** Gathers the facts of a request: one statement, or a batch shared with other waits. @internal */
type FactsOf = (request: PgOperations.SyncInquiry.FactsRequest) => Effect.Effect<ReadonlyArray<Facts>, PostgresError>

/** The failure a failing verdict's facts name. */
const failureOf = (row: Facts): HeldEvent["failing"] => ({
  eventId: row.failingEventId ?? row.eventId,
  streamId: row.streamId ?? "",
  perspectiveName: row.key,
  error: row.failingError ?? "unknown error",
  attempts: row.failingAttempts ?? 0,
  nextAttemptAt: row.failingNextAttemptAt ?? undefined
})

/**
 * The verdicts of `eventIds`, from the facts `facts` gathers (one statement, or a batch shared with other waits).
 * `handled`: the event types each key handles. `versioned`: the bases seen served by versions, added to here.
 *
 * @internal
 */
const classifyWith =
  (handled: ReadonlyMap<string, ReadonlySet<string>>, versioned: Set<string>, facts: FactsOf) =>
  (perspectiveName: string, eventIds: ReadonlyArray<string>): Effect.Effect<Classified, PostgresError> =>
    Effect.gen(function* () {
      const ids = [...new Set(eventIds)]
      // A malformed id can name no event: pending forever, and never sent to the database.
      const valid = ids.filter(EventId.isUuid)
      const out: Record<Exclude<Verdict, "failing">, Array<string>> = {
        pending: ids.filter((id) => !EventId.isUuid(id)),
        processed: [],
        deadLettered: []
      }
      const failing: Array<HeldEvent> = []
      if (valid.length === 0) return { ...out, failing }
      const baseName = Perspective.parseKey(perspectiveName).baseName
      const rows = yield* facts({ baseName, key: perspectiveName, eventIds: valid })
      const keys = new Set<string>()
      const verdicts = new Map<string, Array<Verdict>>()
      const failures = new Map<string, HeldEvent["failing"]>()
      for (const row of rows) {
        keys.add(row.key)
        const v = Sql.verdict(row, (eventType) => handled.get(row.key)?.has(eventType) ?? false)
        if (v === "failing" && !failures.has(row.eventId)) failures.set(row.eventId, failureOf(row))
        const list = verdicts.get(row.eventId)
        if (list === undefined) verdicts.set(row.eventId, [v])
        else list.push(v)
      }
      if (keys.size > 1 || [...keys].some((key) => key !== baseName)) versioned.add(baseName)
      for (const id of valid) {
        const v = Sql.combine(verdicts.get(id) ?? ["pending"])
        if (v === "failing") {
          out.pending.push(id)
          failing.push({ eventId: id, failing: failures.get(id)! })
        } else out[v].push(id)
      }
      return { ...out, failing }
    })

/**
 * Cross-scope discovery: the pending events of one stream of a perspective (and, when asked, its events still in
 * dead letters), or of every stream without one, at most `limit` ids.
 *
 * @internal
 */
/** `PgSyncInquiry`'s `pendingForStream`, over `client`. @internal */
const pendingForStreamWith =
  (client: PgClient.PgClient["Service"], limit: number) =>
  (
    perspectiveName: string,
    streamId: string | undefined,
    eventTypes?: ReadonlyArray<string>,
    discovery?: DiscoveryOptions
  ): Effect.Effect<ReadonlyArray<string>, PgError.PostgresError> => {
    if (streamId !== undefined && !EventId.isUuid(streamId)) return Effect.succeed([])
    const asked = { baseName: Perspective.parseKey(perspectiveName).baseName, key: perspectiveName, eventTypes: eventTypes ?? [], limit }
    return Effect.map(
      streamId === undefined
        ? Sql.pendingEvents(client, asked)
        : Sql.pendingEventsOfStream(client, { ...asked, streamId, deadLettered: discovery?.deadLettered === true }),
      (rows) => rows.map((r) => r.eventId)
    )
  }

/**
 * The `SyncInquiryPort` `PgSyncInquiry` gives awaiters: its answers from the database (a failing query logged, its
 * events left pending), its wake-ups from the `wh_processed` notifications.
 *
 * @internal
 */
/** What the port is made of. @internal */
interface PortParts {
  /** The event types each perspective handles. */
  readonly handled: ReadonlyMap<string, ReadonlySet<string>>
  /** The bases ever seen served by versions (see `PgSyncInquiry.make`). */
  readonly versioned: ReadonlySet<string>
  readonly classifyBatched: (perspectiveName: string, eventIds: ReadonlyArray<string>) => Effect.Effect<Classified, PostgresError>
  readonly pendingForStream: (
    perspectiveName: string,
    streamId: string | undefined,
    eventTypes?: ReadonlyArray<string>,
    discovery?: DiscoveryOptions
  ) => Effect.Effect<ReadonlyArray<string>, PostgresError>
  readonly signal: ChangeSignal
  readonly parked: ParkedWaits
}

/** @internal */
const portOf = ({ classifyBatched, handled, parked, pendingForStream, signal, versioned }: PortParts): SyncInquiryPortShape => ({
  authoritative: true,
  perspectives: new Map([...handled]),
  // Awaiters consult the tracker under the name asked for: its marks stand for the serving set only when that
  // name is the base name and the base never had versions (so the base key alone serves it).
  trustsTrackerMarks: (perspectiveName) =>
    perspectiveName === Perspective.parseKey(perspectiveName).baseName && !versioned.has(perspectiveName),
  pendingEventIds: (perspectiveName, eventIds) =>
    classifyBatched(perspectiveName, eventIds).pipe(
      Effect.map((c) => ({ pendingEventIds: c.pending, deadLetteredEventIds: c.deadLettered, failing: c.failing })),
      Effect.catch((error) =>
        Effect.as(Effect.logWarning("sync inquiry failed; the events stay pending", error), { pendingEventIds: eventIds })
      )
    ),
  pendingForStream: (perspectiveName, streamId, eventTypes, discovery) =>
    pendingForStream(perspectiveName, streamId, eventTypes, discovery).pipe(
      Effect.catch((error) => Effect.as(Effect.logWarning("sync discovery failed", error), [] as ReadonlyArray<string>))
    ),
  changes: { current: signal.current, awaitChangeAfter: (generation) => signal.awaitChangeAfter(generation) },
  // Ids without a database answer yet need no care here: the payload's key is trusted only while it alone serves.
  awaitSettled: (perspectiveName, eventIds, generation) => parked.park(perspectiveName, eventIds, generation)
})
