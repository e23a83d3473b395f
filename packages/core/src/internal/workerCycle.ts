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
import { Cause, Effect, Metric, Tracer } from "effect"
import * as BatchedCompletionStrategy from "./batchedCompletionStrategy.js"
import type * as CompletionStrategy from "../CompletionStrategy.js"
import type { Envelope } from "../Envelope.js"
import type * as EventRegistry from "../EventRegistry.js"
import * as InstantCompletionStrategy from "./instantCompletionStrategy.js"
import type * as PerspectiveRegistry from "../PerspectiveRegistry.js"
import type * as PerspectiveRewinder from "../PerspectiveRewinder.js"
import { PerspectiveStatus } from "../PerspectiveStatus.js"
import type * as PerspectiveStore from "../PerspectiveStore.js"
import type * as ProcessedEventCache from "../ProcessedEventCache.js"
import type * as WorkCoordinator from "../WorkCoordinator.js"
import type * as WorkerOptions from "../WorkerOptions.js"
import { answered } from "./answeredReport.js"
import { applyGroup, type DecodeCache, dedupKey, type GroupApply, type GroupFailure } from "./applyGroup.js"
import { fetchPending, type Groups, groupByPair, loadModels, type Models } from "./cycleReads.js"

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

/** Runs an effect with the interruptibility of the caller's region (`Effect.uninterruptibleMask`'s `restore`). */
export type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

const asIs: Restore = (effect) => effect

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

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

/** What the apply of a cycle's groups leaves: one object per cycle, filled group by group. */
interface Tally {
  readonly processed: Array<ProcessedGroup>
  readonly failures: Array<CompletionStrategy.PerspectiveFailure>
  deduped: number
  readonly more: Set<string>
  /** Pairs a late arrival flagged, for the rewinder. */
  readonly flagged: Array<PerspectiveRewinder.Target>
  /** Streams whose work moved (reported applied, skipped or failed). */
  readonly moved: Set<string>
}

/** The completion reported for a group that applied or skipped rows. */
const completionOf = (
  rows: ReadonlyArray<WorkCoordinator.PendingEvent>,
  { applied, skipped, failure, outcome }: GroupApply,
  ids: ReadonlyArray<string>,
  filled: boolean
): CompletionStrategy.PerspectiveCompletion => {
  const { streamId, perspectiveName, cursorLastEventId } = rows[0]!
  const last = applied.at(-1)
  return {
    workIds: skipped.length === 0 ? ids : [...skipped, ...applied].map((r) => r.workId),
    streamId,
    perspectiveName,
    lastEventId: last?.eventId,
    // A pair that filled its batch has more pending work, which this worker drains next: it is still
    // being processed and catching up, not completed.
    status: filled && failure === undefined ? PerspectiveStatus.Processing | PerspectiveStatus.CatchingUp : PerspectiveStatus.Completed,
    cursorAtFetch: cursorLastEventId,
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
}

/** An applied group as the worker's hooks see it. */
const processedOf = (
  streamId: string,
  perspectiveName: string,
  applied: ReadonlyArray<WorkCoordinator.PendingEvent>,
  envelopes: ReadonlyArray<Envelope>
): ProcessedGroup => {
  const silent = applied.some((r) => r.fires === false)
  const quiet = silent ? new Set(applied.filter((r) => r.fires === false).map((r) => r.eventId)) : undefined
  const firing = quiet === undefined ? envelopes : envelopes.filter((e) => !quiet.has(e.eventId))
  return { streamId, perspectiveName, eventIds: applied.map((r) => r.eventId), envelopes, firing }
}

/** A group's failure: counted, logged and reported. */
const recordFailure = Effect.fnUntraced(function* (
  deps: CycleDeps,
  strategy: CompletionStrategy.Shape,
  tally: Tally,
  streamId: string,
  perspectiveName: string,
  failure: GroupFailure
) {
  yield* Metric.update(Metric.withAttributes(failuresMetric, { perspective: perspectiveName }), 1)
  const attempt = failure.countsAttempt === false ? "not counted as an attempt" : `attempt ${failure.row.attempts + 1}`
  yield* Effect.logWarning(`apply failed (${attempt}): ${messageOf(failure.error)}`).pipe(
    Effect.annotateLogs({
      "whizbang.stream_id": streamId,
      "whizbang.perspective": perspectiveName,
      "whizbang.event_id": failure.row.eventId
    })
  )
  tally.moved.add(streamId)
  const reported: CompletionStrategy.PerspectiveFailure = {
    workId: failure.row.workId,
    streamId,
    perspectiveName,
    error: messageOf(failure.error),
    ...(failure.countsAttempt === false ? { countsAttempt: false } : {})
  }
  tally.failures.push(reported)
  yield* strategy.reportFailure(reported, deps.coordinator)
})

/**
 * Applies every group and reports each through `strategy` (not yet flushed); the work ids reported applied are
 * marked in flight in the dedup cache and added to `marked`.
 */
const applyGroups = Effect.fnUntraced(function* (
  deps: CycleDeps,
  groups: Groups,
  models: Models,
  strategy: CompletionStrategy.Shape,
  marked: Array<string>
) {
  // A span per (stream, perspective) only when a tracing backend is installed: with Effect's native tracer
  // nothing observes it (applies are pure folds that do not log), and building one cost about 5 µs per pair.
  const traced = (yield* Effect.tracer) !== Tracer.nativeTracer
  const decodedById: DecodeCache = new Map()
  const tally: Tally = { processed: [], failures: [], deduped: 0, more: new Set(), flagged: [], moved: new Set() }
  const runs = new Set(deps.perspectives.names)
  const appliedBy = new Map<string, number>()
  const dedupedBy = new Map<string, number>()
  for (const [, all] of groups) {
    // Work of a perspective this instance does not run waits for an instance that does (a rolling deploy): it
    // is never applied, nor failed towards a dead letter, here. (The fetch already leaves it out.)
    if (!runs.has(all[0]!.perspectiveName)) continue
    // A late arrival flagged the pair: never apply it here, out of order; the rewinder rebuilds it below.
    if (all[0]!.rewindRequired === true) {
      tally.flagged.push({ streamId: all[0]!.streamId, perspectiveName: all[0]!.perspectiveName })
      continue
    }
    const filled = all.length >= deps.options.perspectiveBatchSize || all.at(-1)!.more === true
    if (filled) tally.more.add(all[0]!.streamId)
    const blockedAt = all.findIndex((r) => r.blocked === true)
    const rows = blockedAt === -1 ? all : all.slice(0, blockedAt)
    if (rows.length === 0) continue
    const { streamId, perspectiveName } = rows[0]!
    const apply = applyGroup(deps, rows, models.get(perspectiveName)?.get(streamId), decodedById)
    const group = yield* traced
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
    const { applied, envelopes, failure, skipped } = group
    // No log annotations here: nothing inside an apply logs, and copying the annotations for every pair cost
    // allocations; the failure's own log below carries the stream, perspective and event.
    tally.deduped += skipped.length
    // Counted per perspective here, added to the metrics once per cycle below (a metric update per group costs).
    if (applied.length > 0) appliedBy.set(perspectiveName, (appliedBy.get(perspectiveName) ?? 0) + applied.length)
    if (skipped.length > 0) dedupedBy.set(perspectiveName, (dedupedBy.get(perspectiveName) ?? 0) + skipped.length)
    if (applied.length > 0 || skipped.length > 0) {
      const ids = applied.map(dedupKey)
      const completion = completionOf(rows, group, ids, filled)
      tally.moved.add(streamId)
      yield* strategy.reportCompletion(completion, deps.coordinator)
      marked.push(...ids)
      yield* deps.cache.markInFlight(ids)
      if (applied.length > 0) tally.processed.push(processedOf(streamId, perspectiveName, applied, envelopes))
    }
    if (failure !== undefined) yield* recordFailure(deps, strategy, tally, streamId, perspectiveName, failure)
  }
  for (const [perspective, n] of appliedBy) yield* Metric.update(Metric.withAttributes(eventsAppliedMetric, { perspective }), n)
  for (const [perspective, n] of dedupedBy) yield* Metric.update(Metric.withAttributes(dedupHitsMetric, { perspective }), n)
  return tally
})

/**
 * What follows the flush's commit: the dedup cache keeps this cycle's work, the flagged pairs are rewound. Returns
 * the streams whose fetched work could not move at all (`CycleResult.stalled`).
 */
const afterCommit = Effect.fnUntraced(function* (
  deps: CycleDeps,
  pending: ReadonlyArray<WorkCoordinator.PendingEvent>,
  marked: ReadonlyArray<string>,
  tally: Tally,
  interruptible: Restore
) {
  // Only this cycle's own work was acknowledged: other consumers' work stays in flight until their flush.
  yield* deps.cache.activateRetentionOf(marked)
  // Amortised: eviction costs O(evicted + 1), so every cycle keeps the cache at one TTL's worth of work.
  yield* deps.cache.evictExpired
  // Interruptible even where the cycle is not (a rewind commits whole or not at all): interrupted, its streams stay
  // flagged for the next cycle or owner, and the cycle still returns what it committed.
  const rewound =
    tally.flagged.length > 0
      ? yield* Effect.catchCause(interruptible(rewind(deps, tally.flagged)), (cause) =>
          Cause.hasInterruptsOnly(cause) ? Effect.succeed([]) : Effect.failCause(cause)
        )
      : []
  // Rewound, or no longer flagged (finished elsewhere): its work can go on at once.
  for (const r of rewound) if (r.outcome === "rewound" || r.outcome === "notFlagged") tally.moved.add(r.streamId)
  return [...new Set(pending.map((r) => r.streamId))].filter((id) => !tally.moved.has(id))
})

/**
 * `deps` whose coordinator's completion and failure reports run with the caller's interruptibility, answered
 * (`answeredReport.ts`): a stop while a report is in flight waits a short grace for its answer, so a commit that
 * happened keeps its hooks, and a database that hangs does not hold the stop.
 */
const reportingDeps = (deps: CycleDeps, interruptible: Restore): CycleDeps =>
  interruptible === asIs
    ? deps
    : {
        ...deps,
        coordinator: {
          ...deps.coordinator,
          reportCompletions: (completions) => answered(deps.coordinator.reportCompletions(completions), interruptible),
          reportFailures: (failures) => answered(deps.coordinator.reportFailures(failures), interruptible)
        }
      }

/**
 * One cycle over these streams. `prefetched`: the events of some of them as their claim fetched them
 * (`WorkCoordinator.claimAndFetch`, the cycle right after the claim); only the other streams are fetched.
 * `interruptible`: where the cycle may be interrupted — its statements (the fetch, the models' load, the completion
 * and failure reports, a rewind); a caller running it uninterruptibly (the drain consumer) passes its `restore`, so
 * once a report has returned, the cycle runs to its end: what it committed is always returned to the caller, whose
 * hooks then run; a report in flight when the stop comes is given a grace to answer (`answeredReport.ts`).
 */
export const runCycle = (
  deps: CycleDeps,
  streamIds: ReadonlyArray<string>,
  prefetched?: ReadonlyMap<string, ReadonlyArray<WorkCoordinator.PendingEvent>>,
  interruptible: Restore = asIs
): Effect.Effect<CycleResult, WorkCoordinator.WorkCoordinatorError | PerspectiveStore.PerspectiveStoreError> => {
  const marked: Array<string> = []
  return Effect.gen(function* () {
    const pending = yield* fetchPending(deps, streamIds, prefetched, interruptible)
    yield* Metric.update(batchSizeMetric, pending.length)
    const groups = groupByPair(pending)
    const models = yield* loadModels(deps, groups, interruptible)
    const strategy = deps.strategy === "instant" ? InstantCompletionStrategy.instant : yield* BatchedCompletionStrategy.make()
    const reporting = reportingDeps(deps, interruptible)
    const tally = yield* applyGroups(reporting, groups, models, strategy, marked)
    yield* strategy
      .flush(reporting.coordinator)
      .pipe(Effect.withSpan("whizbang.flush", { attributes: { "whizbang.groups": groups.size } }, { captureStackTrace: false }))
    const stalled = yield* afterCommit(deps, pending, marked, tally, interruptible)
    const { processed, failures, deduped, more } = tally
    return { processed, failures, deduped, more: [...more], stalled }
  }).pipe(
    Effect.onError(() => Effect.suspend(() => deps.cache.removeRange(marked))),
    Effect.withSpan("whizbang.cycle", { attributes: { "whizbang.instance_id": deps.instanceId } }, { captureStackTrace: false }),
    Effect.annotateLogs({ "whizbang.instance_id": deps.instanceId })
  )
}
