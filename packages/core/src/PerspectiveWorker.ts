/**
 * The perspective worker: keeps every registered perspective's read models current.
 *
 * A claim loop leases streams with pending work (`WorkCoordinator.claimWork`, or `claimAndFetch` when the
 * coordinator has it: then the claim also fetches their events, which their next cycle uses instead of fetching)
 * and feeds their ids to the drain channel; it wakes on a NOTIFY wake-up, on {@link PerspectiveWorker} `requestImmediatePoll`, or on the
 * safety-net poll. `maxConcurrentDrainConsumers` consumer loops take drain signals — at once when idle, batched
 * with the sliding window only while every other consumer is busy (see `SlidingWindowBatcher`) — skip
 * streams another consumer is processing (the per-stream gate), and run a cycle: fetch, dedup, apply, commit.
 * A stream whose group filled `perspectiveBatchSize` is drained again at once, up to `drainLoopMaxIterations` —
 * unless other claimed streams are waiting for a consumer: then its rest is claimed again after them (a rebuild's
 * history never keeps a consumer from live work for more than one cycle).
 *
 * Only the registered perspectives' work is claimed and fetched (a rolling deploy leaves the rest to instances that
 * run it). A stream whose cycle could not move at all (a flagged pair waiting out its rewind debounce, a rewind
 * lock held elsewhere) is held back from claims for `idleThresholdPolls + 1` poll intervals, and claims of such
 * streams do not count as work found: a worker with only blocked streams polls about once per interval and is idle.
 * (Backoff and stream locks are left out by the claim itself.)
 *
 * **When to use**: provide `layer(config)` with a `WorkCoordinator`, `PerspectiveStore` and `InstanceProvider`
 * and a `PerspectiveRewinder` (the Postgres layers in `@whizbang/postgres` and `@whizbang/stream-locker`, or the
 * in-memory ones); a `NotificationListener` is optional. The rewinder is required so that no composition can
 * leave a stream flagged by a late arrival waiting forever: without one the layer does not type-check.
 * The loops run as fibers of the layer's scope and stop with it.
 *
 * **Gotchas**: a failing apply never stops the worker; it is reported (cursor Failed, retry with backoff, then
 * dead letter) and other streams go on. In tests, wait with `awaitIdle`, never with sleeps.
 *
 * @since 0.1.0
 */
import { Clock, Context, Data, Duration, Effect, Layer, Option, Queue, Stream, SubscriptionRef } from "effect"
import type * as CompletionStrategy from "./CompletionStrategy.js"
import type * as DefinitionErrors from "./DefinitionErrors.js"
import * as EventRegistry from "./EventRegistry.js"
import { InstanceProvider } from "./InstanceProvider.js"
import { afterCycle, completeLifecycles, type LifecycleDeps } from "./internal/lifecycle.js"
import { fetchOptions, type ProcessedGroup, runCycle } from "./internal/workerCycle.js"
import { LifecycleStore } from "./LifecycleStore.js"
import { NotificationListener } from "./NotificationListener.js"
import * as OutageLog from "./OutageLog.js"
import type * as Perspective from "./Perspective.js"
import * as PerspectiveRegistry from "./PerspectiveRegistry.js"
import * as PerspectiveRewinder from "./PerspectiveRewinder.js"
import { PerspectiveStore } from "./PerspectiveStore.js"
import * as ProcessedEventCache from "./ProcessedEventCache.js"
import * as Receptor from "./Receptor.js"
import * as SlidingWindowBatcher from "./SlidingWindowBatcher.js"
import { type PendingEvent, WorkCoordinator } from "./WorkCoordinator.js"
import * as WorkerOptions from "./WorkerOptions.js"

/**
 * Callbacks fired by the worker, for monitoring and deterministic tests.
 *
 * @category models
 * @since 0.1.0
 */
export interface Hooks {
  /** Idle -> active: work appeared after empty polls. */
  readonly onWorkProcessingStarted?: () => Effect.Effect<void>
  /** Active -> idle, after `idleThresholdPolls` consecutive empty polls. */
  readonly onWorkProcessingIdle?: () => Effect.Effect<void>
  /** After every consumer cycle, and after every poll that found no new work (`streams: 0`). */
  readonly onBatchCycleComplete?: (summary: CycleSummary) => Effect.Effect<void>
  /** After a (stream, perspective) committed applied events. */
  readonly onPerspectiveEventProcessed?: (group: ProcessedGroup) => Effect.Effect<void>
  /** After an apply failed and the failure was recorded. */
  readonly onPerspectiveEventFailed?: (failure: CompletionStrategy.PerspectiveFailure) => Effect.Effect<void>
}

/**
 * What one consumer cycle did.
 *
 * @category models
 * @since 0.1.0
 */
export interface CycleSummary {
  readonly streams: number
  readonly eventsApplied: number
  readonly failures: number
  readonly deduped: number
}

/**
 * Worker configuration.
 *
 * @category models
 * @since 0.1.0
 */
export interface Config {
  readonly events: EventRegistry.EventRegistry
  readonly perspectives: ReadonlyArray<Perspective.Any>
  /** Validated with `WorkerOptions.decode`; a bad value fails the layer with `InvalidWorkerOptions`. */
  readonly options?: WorkerOptions.WorkerOptionsInput
  /** `"batched"` (default): one commit per cycle. `"instant"`: one commit per (stream, perspective). */
  readonly completionStrategy?: "batched" | "instant"
  readonly hooks?: Hooks
  readonly dedupObserver?: ProcessedEventCache.Observer
  /**
   * Receptors fired at lifecycle stages (`stage` set). `PostAllPerspectives` / `PostLifecycle` need a
   * `LifecycleStore` in context (the Postgres pipeline provides one); without it they never fire.
   */
  readonly receptors?: ReadonlyArray<Receptor.Receptor>
}

/**
 * The worker's state and controls.
 *
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  /** Wakes the claim loop now; redundant calls are harmless. */
  readonly requestImmediatePoll: Effect.Effect<void>
  readonly isIdle: Effect.Effect<boolean>
  readonly consecutiveEmptyPolls: Effect.Effect<number>
  /** Completes once `idleThresholdPolls` polls made after the call found no work. */
  readonly awaitIdle: Effect.Effect<void>
  /** Completes once the claim loop has polled at least `count` times since start. */
  readonly awaitPolls: (count: number) => Effect.Effect<void>
  /** Polls made, events applied, failures recorded and duplicates dropped since start. */
  readonly stats: Effect.Effect<{
    readonly polls: number
    readonly eventsApplied: number
    readonly failures: number
    readonly deduped: number
  }>
}

/**
 * @category services
 * @since 0.1.0
 */
export class PerspectiveWorker extends Context.Service<PerspectiveWorker, Shape>()("@whizbang/core/PerspectiveWorker") {}

/**
 * The worker's wiring is inconsistent: a perspective or receptor names an event type no `EventDefinition`
 * defines, or a receptor names an unknown perspective. Raised at start-up, listing every problem.
 *
 * @category errors
 * @since 0.1.0
 */
export class WorkerConfigurationError extends Data.TaggedError("WorkerConfigurationError")<{ readonly problems: ReadonlyArray<string> }> {
  override get message(): string {
    return `perspective worker misconfigured:\n  - ${this.problems.join("\n  - ")}`
  }
}

/**
 * Checks a worker configuration without starting anything: options, perspective names and the wiring of
 * perspectives and receptors to event definitions. `make` runs the same checks; compositions that touch the
 * database first (migrations) run this before, so a refused start leaves the database untouched.
 *
 * @category constructors
 * @since 0.1.0
 */
export const validate = (
  config: Config
): Effect.Effect<
  WorkerOptions.WorkerOptions,
  | WorkerOptions.InvalidWorkerOptions
  | WorkerConfigurationError
  | DefinitionErrors.PerspectiveDefinitionError
  | EventRegistry.InvalidEventDefinition
  | Receptor.InvalidReceptor
> =>
  Effect.gen(function* () {
    const options = yield* WorkerOptions.decode(config.options ?? {})
    // Definitions are plain values: this is where their mistakes surface, before any wiring is checked.
    yield* EventRegistry.validate(config.events)
    yield* Effect.forEach(config.receptors ?? [], Receptor.validate, { discard: true })
    yield* checkWiring(config)
    yield* PerspectiveRegistry.make(config.perspectives)
    return options
  })

const checkWiring = (config: Config): Effect.Effect<void, WorkerConfigurationError> => {
  const known = config.events.definitions
  const names = new Set(config.perspectives.map((p) => p.name))
  const problems = [
    ...config.perspectives.flatMap((p) =>
      p.eventTypes
        .filter((t) => !known.has(t))
        .map((t) => `perspective "${p.name}" handles "${t}", which no registered EventDefinition defines`)
    ),
    ...(config.receptors ?? []).flatMap((r) => [
      ...(r.stage === undefined
        ? []
        : r.handles
            .filter((t) => !known.has(t))
            .map((t) => `receptor "${r.name}" fires on "${t}", which no registered EventDefinition defines`)),
      ...(r.perspective !== undefined && !names.has(r.perspective)
        ? [`receptor "${r.name}" waits for perspective "${r.perspective}", which is not registered`]
        : [])
    ])
  ]
  return problems.length === 0 ? Effect.void : Effect.fail(new WorkerConfigurationError({ problems }))
}

interface State {
  readonly polls: number
  readonly emptyPolls: number
  readonly idle: boolean
  readonly eventsApplied: number
  readonly failures: number
  readonly deduped: number
}

const emptyTick: CycleSummary = { streams: 0, eventsApplied: 0, failures: 0, deduped: 0 }

const run = <A>(hook: ((a: A) => Effect.Effect<void>) | undefined, a: A) =>
  hook === undefined ? Effect.void : Effect.catchCause(hook(a), (cause) => Effect.logWarning("worker hook failed", cause))

/**
 * Starts the worker's fibers in the current scope.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (config: Config) =>
  Effect.gen(function* () {
    const options = yield* validate(config)
    // The durations in numbers, once: the loops below work in seconds (SQL leases) and milliseconds.
    const leaseSeconds = Duration.toSeconds(options.lease)
    const leaseMillis = Duration.toMillis(options.lease)
    const coordinator = yield* WorkCoordinator
    const store = yield* PerspectiveStore
    const { instanceId } = yield* InstanceProvider
    const listener = yield* Effect.serviceOption(NotificationListener)
    // Required, never optional: a worker without one would leave late-arrival streams flagged and unapplied.
    const rewinder = yield* PerspectiveRewinder.PerspectiveRewinder
    const perspectives = yield* PerspectiveRegistry.make(config.perspectives)
    const cache = yield* ProcessedEventCache.make({
      retention: options.lease,
      // Acknowledged work is kept for the lease (the reference's retention), but at most one full cycle's rows
      // (maxStreamsPerBatch streams x perspectiveBatchSize rows per perspective). The database cannot hand this
      // worker a row again once its completion is acknowledged: a stream's next fetch starts after its cycle's
      // completion, and a claim skips streams queued or in a cycle here. So retention only guards against
      // coordinators that do re-deliver, and a recent cycle's rows are what such a re-delivery concerns. Each
      // retained id keeps a string and a map entry alive, and V8 sizes the heap to what survives: 240,000 of them
      // (the earlier bound, every consumer's full cycle) held half of the worker's heap and about 100 MB of RSS.
      maxRetained: options.maxStreamsPerBatch * options.perspectiveBatchSize * Math.max(1, config.perspectives.length),
      ...(config.dedupObserver ? { observer: config.dedupObserver } : {})
    })
    const hooks = config.hooks ?? {}
    const lifecycleStore = yield* Effect.serviceOption(LifecycleStore)
    const lifecycle: LifecycleDeps = {
      receptors: config.receptors ?? [],
      store: Option.getOrElse(lifecycleStore, () => ({ claimCompleted: () => Effect.succeed([]), complete: () => Effect.void })),
      events: config.events,
      instanceId,
      reclaimAfterSeconds: leaseSeconds,
      scope: yield* Effect.scope
    }
    // Each loop logs a run of failures (a database outage) once, and once more when it recovers: see OutageLog.
    const reconcileLog = yield* OutageLog.make("reconciling lifecycles")
    const claimLog = yield* OutageLog.make("claiming work")
    const leaseLog = yield* OutageLog.make("renewing stream leases")
    const cycleLog = yield* OutageLog.make("perspective cycle")
    const stagesLog = yield* OutageLog.make("lifecycle stages")
    const reconcileLifecycles = reconcileLog.guard(
      Effect.tap(completeLifecycles(lifecycle), (n) => (n > 0 ? Effect.logInfo(`fired ${n} orphaned lifecycle(s)`) : Effect.void)),
      undefined
    )
    const deps = {
      instanceId,
      coordinator,
      store,
      perspectives,
      events: config.events,
      cache,
      options,
      strategy: config.completionStrategy ?? "batched",
      rewinder
    } as const

    const drain = yield* Queue.bounded<string>(Math.max(options.maxStreamsPerBatch * 2, 64))
    const wake = yield* Queue.sliding<void>(1)
    const state = yield* SubscriptionRef.make<State>({ polls: 0, emptyPolls: 0, idle: true, eventsApplied: 0, failures: 0, deduped: 0 })
    const gate = new Set<string>()
    const queued = new Set<string>()
    // Events the claim fetched for streams not yet in a cycle (`claimAndFetch`), used by their next cycle only.
    const prefetched = new Map<string, ReadonlyArray<PendingEvent>>()
    let busy = 0
    const pollMillis = Option.isSome(listener)
      ? Math.max(Duration.toMillis(options.pollingInterval), Duration.toMillis(options.notifyHealthyPollingInterval))
      : Duration.toMillis(options.pollingInterval)
    // Streams whose last cycle could not move, with the time before which they are not claimed again. An entry
    // stays (past its time) until a cycle on the stream moves, so re-tries of a stuck stream never count as work.
    const stalled = new Map<string, number>()
    const holdMillis = pollMillis * (options.idleThresholdPolls + 1)
    const forgetAfterMillis = leaseMillis

    const claimOnce = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      for (const [id, until] of stalled) if (until + forgetAfterMillis < now) stalled.delete(id)
      const held = [...stalled].filter(([, until]) => until > now).map(([id]) => id)
      const request = {
        instanceId,
        maxStreams: options.maxStreamsPerBatch,
        leaseSeconds,
        perspectiveNames: perspectives.names,
        exclude: [...queued, ...held]
      }
      // A coordinator that can fetches what it claims in the same call: the claimed streams' first cycle starts
      // with their events (one round trip less between an append and its read models).
      const claimed = yield* (
        coordinator.claimAndFetch === undefined
          ? coordinator.claimWork(request)
          : Effect.map(coordinator.claimAndFetch({ ...request, ...fetchOptions(deps) }), ({ pending, streams }) => {
              const byStream = new Map(streams.map((id) => [id, [] as Array<PendingEvent>]))
              for (const row of pending) byStream.get(row.streamId)?.push(row)
              for (const [id, rows] of byStream) prefetched.set(id, rows)
              return streams
            })
      ).pipe((claim) => claimLog.guard(claim, [] as ReadonlyArray<string>))
      const previous = yield* SubscriptionRef.get(state)
      // A poll is empty only when nothing was claimed AND nothing is queued or in a cycle (committing, firing
      // receptors) — re-tries of streams that could not move last time excepted: they are not work found.
      const found = claimed.filter((id) => !stalled.has(id)).length
      const waiting = [...queued].filter((id) => !stalled.has(id)).length
      const emptyPolls = found === 0 && busy === 0 && waiting === 0 ? previous.emptyPolls + 1 : 0
      const idle = found > 0 ? false : previous.idle || emptyPolls >= options.idleThresholdPolls
      // Lifecycles whose last perspective completed outside a cycle's own check (a dead letter, a crash) are
      // fired when the worker turns idle — before it says so, so waiting for idle also waits for them.
      if (!previous.idle && idle) yield* reconcileLifecycles
      const before = yield* SubscriptionRef.get(state)
      yield* SubscriptionRef.set(state, { ...before, polls: before.polls + 1, emptyPolls, idle })
      if (before.idle && !idle) yield* run(hooks.onWorkProcessingStarted, undefined)
      if (!before.idle && idle) yield* run(hooks.onWorkProcessingIdle, undefined)
      // A stream already queued or being processed here is not offered again: duplicates would only keep the
      // drain window sliding and make consumers skip. Its newer events are claimed after its cycle (see consumer).
      const fresh = claimed.filter((id) => !queued.has(id))
      for (const id of fresh) queued.add(id)
      yield* Queue.offerAll(drain, fresh)
      // A tick that found no new work is still a completed tick (the reference: "whether or not work was found").
      // An idle worker also lets expired dedup entries go (cycles evict too; each call costs O(evicted + 1)).
      if (fresh.length === 0) yield* Effect.andThen(cache.evictExpired, run(hooks.onBatchCycleComplete, emptyTick))
      return fresh.length
    })

    const claimLoop = Effect.forever(
      Effect.flatMap(claimOnce, (count) =>
        count >= options.maxStreamsPerBatch ? Effect.void : Effect.race(Effect.sleep(Duration.millis(pollMillis)), Queue.take(wake))
      )
    )

    // A cycle that outlives a third of the lease (a slow apply, a slow commit) renews its streams' leases until it
    // ends, so no other instance takes them over meanwhile. A lease already lost stays lost: the commit is fenced.
    const renewEvery = Duration.millis(Math.max(1, Math.floor(leaseMillis / 3)))
    const withLeaseRenewal = <A, E>(streamIds: ReadonlyArray<string>, cycle: Effect.Effect<A, E>): Effect.Effect<A, E> => {
      const renew = leaseLog.guard(
        Effect.tap(coordinator.renewStreamLeases({ instanceId, streamIds, leaseSeconds }), (held) =>
          held.length < streamIds.length
            ? Effect.logWarning(
                `lost the lease on ${streamIds.length - held.length} stream(s) during a long cycle; their work is redone by the new owner`
              )
            : Effect.void
        ),
        undefined
      )
      return Effect.scoped(Effect.andThen(Effect.forkScoped(Effect.forever(Effect.delay(renew, renewEvery))), cycle))
    }

    const processStreams = (streamIds: ReadonlyArray<string>): Effect.Effect<void> =>
      Effect.gen(function* () {
        let batch = streamIds
        // The claim's fetch serves the first pass only; later passes fetch what is pending then.
        const claimedWith = new Map<string, ReadonlyArray<PendingEvent>>()
        for (const id of streamIds) {
          const rows = prefetched.get(id)
          if (rows !== undefined) claimedWith.set(id, rows)
          prefetched.delete(id)
        }
        for (let iteration = 0; iteration < options.drainLoopMaxIterations && batch.length > 0; iteration++) {
          const result = yield* withLeaseRenewal(batch, runCycle(deps, batch, iteration === 0 ? claimedWith : undefined))
          yield* SubscriptionRef.update(state, (s) => ({
            ...s,
            eventsApplied: s.eventsApplied + result.processed.reduce((n, g) => n + g.eventIds.length, 0),
            failures: s.failures + result.failures.length,
            deduped: s.deduped + result.deduped
          }))
          yield* Effect.forEach(result.processed, (group) => run(hooks.onPerspectiveEventProcessed, group), { discard: true })
          yield* Effect.forEach(result.failures, (failure) => run(hooks.onPerspectiveEventFailed, failure), { discard: true })
          yield* stagesLog.guard(afterCycle(lifecycle, result.processed, []), undefined)
          yield* run(hooks.onBatchCycleComplete, {
            streams: batch.length,
            eventsApplied: result.processed.reduce((n, g) => n + g.eventIds.length, 0),
            failures: result.failures.length,
            deduped: result.deduped
          })
          const stuck = new Set(result.stalled)
          const until = (yield* Clock.currentTimeMillis) + holdMillis
          // A stuck stream that moved again (its rewind ran) is work: the worker is not idle until it is drained.
          if (batch.some((id) => stalled.has(id) && !stuck.has(id))) {
            const before = yield* SubscriptionRef.getAndUpdate(state, (s) => ({ ...s, emptyPolls: 0, idle: false }))
            if (before.idle) yield* run(hooks.onWorkProcessingStarted, undefined)
          }
          for (const id of batch) {
            if (stuck.has(id)) stalled.set(id, until)
            else stalled.delete(id)
          }
          batch = result.more.length >= options.drainLoopRefetchMinBatch || (result.more.length > 0 && iteration === 0) ? result.more : []
          // Streams claimed and waiting for a consumer (in the drain queue or an open batch) go first: a deep
          // stream's or a rebuild's next pass is claimed again after them, so no stream waits out several passes.
          if (batch.length > 0 && queued.size > gate.size) break
        }
        // Whatever is left is claimed again by the next poll; ask for it now.
        if (batch.length > 0) yield* Queue.offer(wake, undefined)
        return true
      }).pipe(
        (cycles) => cycleLog.guard(cycles, false),
        Effect.flatMap((done) => (done ? Effect.void : Effect.asVoid(Queue.offer(wake, undefined))))
      )

    const consumer = Effect.forever(
      Effect.gen(function* () {
        const { items } = yield* SlidingWindowBatcher.take(drain, {
          slidingWindow: options.drainBatcher.slidingWindow,
          maxWait: options.drainBatcher.maxWait,
          maxSize: options.drainBatcher.maxSize,
          // The window batches only while work is flowing: an idle consumer applies the first arrival at once,
          // and a batch stays open only while every other consumer is in a cycle (waiting while one is free only
          // adds latency). So a lone append is never held back, and a saturated worker still builds large batches.
          eagerWhenIdle: true,
          keepOpen: () => busy >= options.maxConcurrentDrainConsumers - 1
        })
        const mine = items.filter((id) => !gate.has(id))
        for (const id of mine) gate.add(id)
        // A cycle over re-tries of stuck streams only does not keep the worker busy (see claimOnce).
        const counts = mine.some((id) => !stalled.has(id))
        if (counts) busy++
        yield* processStreams(mine).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              if (counts) busy--
              mine.forEach((id) => {
                gate.delete(id)
                queued.delete(id)
              })
              // Never left for a later cycle: by then those events may be applied (a stream skipped above was in
              // another consumer's cycle, which used its own).
              for (const id of items) prefetched.delete(id)
            })
          )
        )
        // Events that arrived for these streams while they were queued were not claimed then: claim them now.
        yield* Queue.offer(wake, undefined)
      })
    )

    yield* Effect.logInfo(`perspective worker starting: instance ${instanceId}, perspectives ${perspectives.names.join(", ") || "(none)"}`)
    if (Option.isSome(listener)) {
      yield* Effect.forkScoped(Stream.runForEach(listener.value.wakeUps, () => Queue.offer(wake, undefined)))
    }
    // Orphaned lifecycles (all perspectives done, stages never fired: a crash) are fired before new work.
    yield* reconcileLifecycles
    yield* Effect.forkScoped(claimLoop)
    yield* Effect.replicateEffect(Effect.forkScoped(consumer), options.maxConcurrentDrainConsumers, { discard: true })

    const awaitIdle = Effect.gen(function* () {
      const start = (yield* SubscriptionRef.get(state)).polls
      yield* Queue.offer(wake, undefined)
      yield* SubscriptionRef.changes(state).pipe(
        Stream.takeUntil((s) => s.polls >= start + options.idleThresholdPolls && s.emptyPolls >= options.idleThresholdPolls),
        Stream.runDrain
      )
    })

    return PerspectiveWorker.of({
      requestImmediatePoll: Queue.offer(wake, undefined).pipe(Effect.asVoid),
      isIdle: Effect.map(SubscriptionRef.get(state), (s) => s.idle),
      consecutiveEmptyPolls: Effect.map(SubscriptionRef.get(state), (s) => s.emptyPolls),
      awaitIdle,
      awaitPolls: (count) =>
        SubscriptionRef.changes(state).pipe(
          Stream.takeUntil((s) => s.polls >= count),
          Stream.runDrain
        ),
      stats: Effect.map(SubscriptionRef.get(state), ({ deduped, eventsApplied, failures, polls }) => ({
        polls,
        eventsApplied,
        failures,
        deduped
      }))
    })
  })

/**
 * The worker as a layer; its fibers live as long as the layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (config: Config) => Layer.effect(PerspectiveWorker, make(config))

/**
 * Completes once the {@link PerspectiveWorker} in context is idle: `yield* PerspectiveWorker.awaitIdle`.
 *
 * @category accessors
 * @since 0.1.0
 */
export const awaitIdle: Effect.Effect<void, never, PerspectiveWorker> = Effect.flatMap(PerspectiveWorker, (worker) => worker.awaitIdle)
