/**
 * One worker cycle over a batch of claimed streams: fetch their pending events in one call (with their pairs' stored
 * models, when the coordinator loads them with the fetch; the other pairs' models in one store call per
 * perspective), drop re-delivered work (dedup cache), decode and apply in memory, then report
 * through the completion strategy and flush. A completion carries the new model, so the coordinator commits the
 * model, the cursor and the deletion of exactly the applied work rows together.
 *
 * If the flush fails (connection lost, lease fenced) nothing of the cycle is trusted: the cache forgets the
 * cycle's work ids and the database re-delivers the rows, to be applied again from the committed model. A
 * report is never replayed later, because its model was computed from a row that may since have changed.
 */
import { Cause, Effect, Metric, type Result, Tracer } from "effect"
import type { InvalidEventPayload, UnknownEventType } from "../EventStoreError.js"
import * as BatchedCompletionStrategy from "./batchedCompletionStrategy.js"
import type * as CompletionStrategy from "../CompletionStrategy.js"
import type { Envelope, EventMetadata, EventScope } from "../Envelope.js"
import type * as EventRegistry from "../EventRegistry.js"
import * as InstantCompletionStrategy from "./instantCompletionStrategy.js"
import { ownRowsName } from "../Perspective.js"
import type * as PerspectiveRegistry from "../PerspectiveRegistry.js"
import type * as PerspectiveRewinder from "../PerspectiveRewinder.js"
import { PerspectiveStatus } from "../PerspectiveStatus.js"
import type * as PerspectiveStore from "../PerspectiveStore.js"
import type * as ProcessedEventCache from "../ProcessedEventCache.js"
import type * as WorkCoordinator from "../WorkCoordinator.js"
import type * as WorkerOptions from "../WorkerOptions.js"

export interface CycleDeps {
  readonly instanceId: string
  readonly coordinator: WorkCoordinator.Shape
  readonly store: PerspectiveStore.Shape
  readonly perspectives: PerspectiveRegistry.Shape
  readonly events: EventRegistry.EventRegistry
  readonly cache: ProcessedEventCache.ProcessedEventCache
  readonly options: WorkerOptions.WorkerOptions
  readonly strategy: "batched" | "instant"
  /** Required: without it a flagged pair would wait forever, unapplied. */
  readonly rewinder: PerspectiveRewinder.Shape
}

export interface ProcessedGroup {
  readonly streamId: string
  readonly perspectiveName: string
  readonly eventIds: ReadonlyArray<string>
  /** The applied events, payloads decoded, in order. */
  readonly envelopes: ReadonlyArray<Envelope>
  /** Of `envelopes`, the ones `PostPerspective` receptors fire for (see `PendingEvent.fires`). */
  readonly firing?: ReadonlyArray<Envelope> | undefined
}

export interface CycleResult {
  readonly processed: ReadonlyArray<ProcessedGroup>
  readonly failures: ReadonlyArray<CompletionStrategy.PerspectiveFailure>
  readonly deduped: number
  /** Streams that may have more pending work than one pass took (a group hit `perspectiveBatchSize`). */
  readonly more: ReadonlyArray<string>
  /**
   * Streams whose fetched work could not move at all (blocked, or flagged and not rewound: debounce, lock):
   * the worker holds them back from claims for a while instead of spinning on them.
   */
  readonly stalled: ReadonlyArray<string>
}

const groupKey = (e: WorkCoordinator.PendingEvent) => `${e.streamId}|${e.perspectiveName}`

/**
 * Dedup is by work row: only the database re-delivering the SAME row is a duplicate. Rebuild, rewind, purge and
 * dead-letter retry create new rows for events already applied, and those must be applied again (keyed by
 * (perspective, event), a rebuild within the TTL was silently dropped). Exported for tests and observers.
 */
export const dedupKey = (row: { readonly workId: string }) => row.workId

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** Decoded payloads of one cycle, by event id: an event handled by several perspectives is decoded once. */
type DecodeCache = Map<string, Result.Result<unknown, UnknownEventType | InvalidEventPayload>>

interface GroupFailure {
  readonly row: WorkCoordinator.PendingEvent
  readonly error: string
  /** `false`: not the event's fault (the stored model no longer decodes); no attempt is counted. */
  readonly countsAttempt?: false
}

/** Whether `ids` are exactly the event ids of `rows`, in the same order. */
const inOrder = (ids: ReadonlyArray<string>, rows: ReadonlyArray<WorkCoordinator.PendingEvent>): boolean => {
  if (ids.length !== rows.length) return false
  for (let i = 0; i < ids.length; i++) if (ids[i] !== rows[i]!.eventId) return false
  return true
}

// `Effect.fnUntraced`, not a function returning `Effect.gen`: on Node 20 every fresh generator closure costs about
// 2.3 µs (a new prototype and hidden class each time), and this runs once per (stream, perspective) of a cycle.
const applyGroup = Effect.fnUntraced(function* (
  deps: CycleDeps,
  rows: ReadonlyArray<WorkCoordinator.PendingEvent>,
  stored: unknown,
  decodedById: DecodeCache
) {
  const { streamId, perspectiveName } = rows[0]!
  const unprocessed = yield* deps.cache.filterUnprocessed(rows.map(dedupKey), perspectiveName, streamId)
  // Nearly always nothing is a duplicate: then no set is built.
  const fresh = unprocessed.length === rows.length ? undefined : new Set(unprocessed)
  const skipped = fresh === undefined ? [] : rows.filter((r) => !fresh.has(dedupKey(r)))
  const candidates = fresh === undefined ? rows : rows.filter((r) => fresh.has(dedupKey(r)))
  const envelopes: Array<Envelope> = []
  let failure: GroupFailure | undefined
  for (const row of candidates) {
    const decoded = decodedById.get(row.eventId) ?? (yield* Effect.result(deps.events.decode(row.eventType, row.payload, row.eventId)))
    decodedById.set(row.eventId, decoded)
    if (decoded._tag === "Failure") {
      failure = { row, error: decoded.failure.message }
      break
    }
    envelopes.push({
      eventId: row.eventId,
      streamId,
      streamVersion: row.streamVersion ?? 0,
      eventType: row.eventType,
      payload: decoded.success,
      metadata: (row.metadata ?? {}) as EventMetadata,
      scope: (row.scope ?? {}) as EventScope
    })
  }
  const runner = yield* Effect.result(deps.perspectives.get(perspectiveName))
  if (runner._tag === "Failure") {
    const unknown: GroupFailure = { row: candidates[0] ?? rows[0]!, error: runner.failure.message }
    return { skipped, applied: [], failure: unknown, outcome: undefined, envelopes: [] }
  }
  const outcome = yield* runner.success.run(streamId, stored, envelopes)
  // Nearly always every candidate is applied, in fetch order: then no lookup is built.
  if (outcome.failure === undefined && inOrder(outcome.appliedEventIds, candidates)) {
    return { skipped, applied: candidates, failure, outcome, envelopes }
  }
  const byEvent = new Map(candidates.map((r) => [r.eventId, r]))
  const applied = outcome.appliedEventIds.map((id) => byEvent.get(id)!)
  if (outcome.failure !== undefined) {
    const row = byEvent.get(outcome.failure.eventId) ?? candidates[applied.length] ?? candidates[0]!
    failure =
      outcome.storedModelUnreadable === true
        ? { row, error: outcome.failure.message, countsAttempt: false }
        : { row, error: outcome.failure.message }
  }
  const appliedIds = new Set(outcome.appliedEventIds)
  return { skipped, applied, failure, outcome, envelopes: envelopes.filter((e) => appliedIds.has(e.eventId)) }
})

/**
 * The rewind path: flagged pairs go to the worker's rewinder (a required service, so no composition can leave
 * them waiting unnoticed). The dedup cache needs no clean-up: it is keyed by work row, and the rows a rewind
 * leaves for the normal path were never applied.
 */
const rewind = (deps: CycleDeps, targets: ReadonlyArray<PerspectiveRewinder.Target>) =>
  Effect.gen(function* () {
    return yield* deps.rewinder.rewindFlagged(targets)
  })

// Telemetry (names listed in @whizbang/postgres Telemetry): spans whizbang.fetch / apply / flush, and metrics.
// Metrics are registered by name, so other packages updating the same names share these series.
const eventsAppliedMetric = Metric.counter("whizbang_events_applied", { description: "events applied to read models" })
const batchSizeMetric = Metric.histogram("whizbang_batch_size", {
  description: "pending events fetched per cycle",
  boundaries: Metric.exponentialBoundaries({ start: 1, factor: 4, count: 8 })
})
const dedupHitsMetric = Metric.counter("whizbang_dedup_hits", { description: "re-delivered events dropped by the dedup cache" })
const failuresMetric = Metric.counter("whizbang_apply_failures", { description: "failed applies (decode, apply, unknown perspective)" })

/**
 * A cycle applies at most this many `perspectiveBatchSize`s of background work (a perspective version's history):
 * 2,000 events per cycle by default. Measured (bench scenario v, 200,000 events): 500 kept the live version's lag
 * lowest but rebuilt at a third of the speed, 5,000 rebuilt faster with a longer lag; 2,000 trades between them.
 */
const backgroundBatches = 20

/** The fetch options of every cycle (and of a claim that fetches what it claims: `WorkCoordinator.claimAndFetch`). */
export const fetchOptions = (deps: Pick<CycleDeps, "options" | "perspectives">) => ({
  limit: deps.options.perspectiveBatchSize,
  backgroundLimit: deps.options.perspectiveBatchSize * backgroundBatches,
  perspectiveNames: deps.perspectives.names,
  withModels: true
})

/** Runs an effect with the interruptibility of the caller's region (`Effect.uninterruptibleMask`'s `restore`). */
export type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

const asIs: Restore = (effect) => effect

/**
 * One cycle over these streams. `prefetched`: the events of some of them as their claim fetched them
 * (`WorkCoordinator.claimAndFetch`, the cycle right after the claim); only the other streams are fetched.
 * `interruptible`: where the cycle may be interrupted — its reads (the fetch, the models' load) only; a caller running
 * it uninterruptibly (the drain consumer) passes its `restore`, so from the first apply on, the cycle runs to its end
 * once it began: what it commits is always reported to the caller, whose hooks then run.
 */
export const runCycle = (
  deps: CycleDeps,
  streamIds: ReadonlyArray<string>,
  prefetched?: ReadonlyMap<string, ReadonlyArray<WorkCoordinator.PendingEvent>>,
  interruptible: Restore = asIs
): Effect.Effect<CycleResult, WorkCoordinator.WorkCoordinatorError | PerspectiveStore.PerspectiveStoreError> => {
  const marked: Array<string> = []
  return Effect.gen(function* () {
    // A span per (stream, perspective) only when a tracing backend is installed: with Effect's native tracer
    // nothing observes it (applies are pure folds that do not log), and building one cost about 5 µs per pair.
    const traced = (yield* Effect.tracer) !== Tracer.nativeTracer
    const toFetch = prefetched === undefined ? streamIds : streamIds.filter((id) => !prefetched.has(id))
    // The span covers the events' arrival either way (`whizbang.prefetched`: streams whose claim fetched them).
    const pending = yield* interruptible(
      toFetch.length === 0
        ? Effect.succeed<ReadonlyArray<WorkCoordinator.PendingEvent>>([])
        : deps.coordinator.fetchPendingEvents({ instanceId: deps.instanceId, streamIds: toFetch, ...fetchOptions(deps) })
    ).pipe(
      Effect.map((fetched) =>
        prefetched === undefined || toFetch.length === streamIds.length
          ? fetched
          : [...streamIds.flatMap((id) => prefetched.get(id) ?? []), ...fetched]
      ),
      Effect.withSpan(
        "whizbang.fetch",
        { attributes: { "whizbang.streams": streamIds.length, "whizbang.prefetched": streamIds.length - toFetch.length } },
        { captureStackTrace: false }
      )
    )
    yield* Metric.update(batchSizeMetric, pending.length)
    const groups = new Map<string, Array<WorkCoordinator.PendingEvent>>()
    for (const row of pending) {
      const key = groupKey(row)
      const group = groups.get(key)
      if (group === undefined) groups.set(key, [row])
      else group.push(row)
    }
    // Models: the fetch carries them when the coordinator loads them with it (one round trip); the pairs it did not
    // load are read from the store, one call per perspective.
    const models = new Map<string, Map<string, unknown>>()
    const wanted = new Map<string, Set<string>>()
    for (const [, rows] of groups) {
      const { perspectiveName, storedModel, streamId } = rows[0]!
      if (storedModel !== undefined) {
        if (storedModel !== null) {
          const byStream = models.get(perspectiveName) ?? new Map<string, unknown>()
          models.set(perspectiveName, byStream.set(streamId, storedModel.data))
        }
        continue
      }
      const ids = wanted.get(perspectiveName) ?? new Set<string>()
      wanted.set(perspectiveName, ids.add(streamId))
    }
    // Applies are synchronous folds, so what runs concurrently per perspective is the model load (one call each).
    if (wanted.size > 0) {
      yield* interruptible(
        Effect.forEach(
          wanted,
          ([name, ids]) =>
            // This version's own rows (in Postgres not the view of the live version).
            Effect.map(deps.store.getMany(ownRowsName(name), [...ids]), (rows) => {
              const byStream = models.get(name) ?? new Map<string, unknown>()
              for (const [id, row] of rows) byStream.set(id, row.data)
              models.set(name, byStream)
            }),
          { concurrency: deps.options.maxConcurrentPerspectives, discard: true }
        ).pipe(Effect.withSpan("whizbang.load", { attributes: { "whizbang.perspectives": wanted.size } }, { captureStackTrace: false }))
      )
    }

    const strategy = deps.strategy === "instant" ? InstantCompletionStrategy.instant : yield* BatchedCompletionStrategy.make()
    const decodedById: DecodeCache = new Map()
    const processed: Array<ProcessedGroup> = []
    const failures: Array<CompletionStrategy.PerspectiveFailure> = []
    const more = new Set<string>()
    let deduped = 0
    const flagged: Array<PerspectiveRewinder.Target> = []
    const moved = new Set<string>()
    const runs = new Set(deps.perspectives.names)
    const appliedBy = new Map<string, number>()
    const dedupedBy = new Map<string, number>()
    for (const [, all] of groups) {
      // Work of a perspective this instance does not run waits for an instance that does (a rolling deploy): it
      // is never applied, nor failed towards a dead letter, here. (The fetch already leaves it out.)
      if (!runs.has(all[0]!.perspectiveName)) continue
      // A late arrival flagged the pair: never apply it here, out of order; the rewinder rebuilds it below.
      if (all[0]!.rewindRequired === true) {
        flagged.push({ streamId: all[0]!.streamId, perspectiveName: all[0]!.perspectiveName })
        continue
      }
      const filled = all.length >= deps.options.perspectiveBatchSize || all.at(-1)!.more === true
      if (filled) more.add(all[0]!.streamId)
      const blockedAt = all.findIndex((r) => r.blocked === true)
      const rows = blockedAt === -1 ? all : all.slice(0, blockedAt)
      if (rows.length === 0) continue
      const { streamId, perspectiveName } = rows[0]!
      const apply = applyGroup(deps, rows, models.get(perspectiveName)?.get(streamId), decodedById)
      const { applied, envelopes, failure, outcome, skipped } = yield* traced
        ? apply.pipe(
            Effect.withSpan(
              "whizbang.apply",
              {
                attributes: { "whizbang.stream_id": streamId, "whizbang.perspective": perspectiveName, "whizbang.events": rows.length }
              },
              // Capturing a stack trace for each pair costs more than the apply itself.
              { captureStackTrace: false }
            )
          )
        : apply
      // No log annotations here: nothing inside an apply logs, and copying the annotations for every pair cost
      // allocations; the failure's own log below carries the stream, perspective and event.
      deduped += skipped.length
      // Counted per perspective here, added to the metrics once per cycle below (a metric update per group costs).
      if (applied.length > 0) appliedBy.set(perspectiveName, (appliedBy.get(perspectiveName) ?? 0) + applied.length)
      if (skipped.length > 0) dedupedBy.set(perspectiveName, (dedupedBy.get(perspectiveName) ?? 0) + skipped.length)
      const last = applied.at(-1)
      if (applied.length > 0 || skipped.length > 0) {
        const ids = applied.map(dedupKey)
        const completion: CompletionStrategy.PerspectiveCompletion = {
          workIds: skipped.length === 0 ? ids : [...skipped, ...applied].map((r) => r.workId),
          streamId,
          perspectiveName,
          lastEventId: last?.eventId,
          // A pair that filled its batch has more pending work, which this worker drains next: it is still
          // being processed and catching up, not completed.
          status:
            filled && failure === undefined ? PerspectiveStatus.Processing | PerspectiveStatus.CatchingUp : PerspectiveStatus.Completed,
          cursorAtFetch: rows[0]!.cursorLastEventId,
          model:
            last === undefined || outcome === undefined
              ? undefined
              : {
                  data: outcome.model,
                  action: outcome.action,
                  metadata: { ...(last.metadata as object | undefined), eventId: last.eventId, eventType: last.eventType },
                  scope: last.scope ?? {},
                  eventsApplied: applied.length
                }
        }
        moved.add(streamId)
        yield* strategy.reportCompletion(completion, deps.coordinator)
        marked.push(...ids)
        yield* deps.cache.markInFlight(ids)
        if (applied.length > 0) {
          const silent = applied.some((r) => r.fires === false)
          const quiet = silent ? new Set(applied.filter((r) => r.fires === false).map((r) => r.eventId)) : undefined
          const firing = quiet === undefined ? envelopes : envelopes.filter((e) => !quiet.has(e.eventId))
          processed.push({ streamId, perspectiveName, eventIds: applied.map((r) => r.eventId), envelopes, firing })
        }
      }
      if (failure !== undefined) {
        yield* Metric.update(Metric.withAttributes(failuresMetric, { perspective: perspectiveName }), 1)
        const attempt = failure.countsAttempt === false ? "not counted as an attempt" : `attempt ${failure.row.attempts + 1}`
        yield* Effect.logWarning(`apply failed (${attempt}): ${messageOf(failure.error)}`).pipe(
          Effect.annotateLogs({
            "whizbang.stream_id": streamId,
            "whizbang.perspective": perspectiveName,
            "whizbang.event_id": failure.row.eventId
          })
        )
        moved.add(streamId)
        const reported: CompletionStrategy.PerspectiveFailure = {
          workId: failure.row.workId,
          streamId,
          perspectiveName,
          error: messageOf(failure.error),
          ...(failure.countsAttempt === false ? { countsAttempt: false } : {})
        }
        failures.push(reported)
        yield* strategy.reportFailure(reported, deps.coordinator)
      }
    }
    for (const [perspective, n] of appliedBy) yield* Metric.update(Metric.withAttributes(eventsAppliedMetric, { perspective }), n)
    for (const [perspective, n] of dedupedBy) yield* Metric.update(Metric.withAttributes(dedupHitsMetric, { perspective }), n)
    yield* strategy
      .flush(deps.coordinator)
      .pipe(Effect.withSpan("whizbang.flush", { attributes: { "whizbang.groups": groups.size } }, { captureStackTrace: false }))
    // Only this cycle's own work was acknowledged: other consumers' work stays in flight until their flush.
    yield* deps.cache.activateRetentionOf(marked)
    // Amortised: eviction costs O(evicted + 1), so every cycle keeps the cache at one TTL's worth of work.
    yield* deps.cache.evictExpired
    // Interruptible even where the cycle is not (a rewind commits whole or not at all): interrupted, its streams stay
    // flagged for the next cycle or owner, and the cycle still returns what it committed.
    const rewound =
      flagged.length > 0
        ? yield* Effect.catchCause(interruptible(rewind(deps, flagged)), (cause) =>
            Cause.hasInterruptsOnly(cause) ? Effect.succeed([]) : Effect.failCause(cause)
          )
        : []
    // Rewound, or no longer flagged (finished elsewhere): its work can go on at once.
    for (const r of rewound) if (r.outcome === "rewound" || r.outcome === "notFlagged") moved.add(r.streamId)
    const stalled = [...new Set(pending.map((r) => r.streamId))].filter((id) => !moved.has(id))
    return { processed, failures, deduped, more: [...more], stalled }
  }).pipe(
    Effect.onError(() => Effect.suspend(() => deps.cache.removeRange(marked))),
    Effect.withSpan("whizbang.cycle", { attributes: { "whizbang.instance_id": deps.instanceId } }, { captureStackTrace: false }),
    Effect.annotateLogs({ "whizbang.instance_id": deps.instanceId })
  )
}
