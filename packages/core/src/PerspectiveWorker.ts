/**
 * The perspective worker: keeps every registered perspective's read models current.
 *
 * A claim loop leases streams with pending work (`WorkCoordinator.claimWork`, or `claimAndFetch` when the
 * coordinator has it: then the claim also fetches their events, which their next cycle uses instead of fetching)
 * and feeds their ids to the drain channel; it wakes on a NOTIFY wake-up, on {@link PerspectiveWorker} `requestImmediatePoll`, or on the
 * safety-net poll. `maxConcurrentDrainConsumers` consumer loops take drain signals — at once when idle, batched
 * with the sliding window only while every other consumer is busy (see `internal/slidingWindowBatcher.ts`) — skip
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
import { Context, Data, Deferred, Duration, Effect, Layer, Option, Queue, Stream, SubscriptionRef } from "effect"
import type * as CompletionStrategy from "./CompletionStrategy.js"
import type * as DefinitionErrors from "./DefinitionErrors.js"
import * as EventRegistry from "./EventRegistry.js"
import { InstanceProvider } from "./InstanceProvider.js"
import { claimLoop } from "./internal/claimLoop.js"
import { drainConsumer } from "./internal/drainConsumer.js"
import { completeLifecycles, type LifecycleDeps } from "./internal/lifecycle.js"
import type { CycleDeps, ProcessedGroup } from "./internal/workerCycle.js"
import type { WorkerContext } from "./internal/workerContext.js"
import { initialProgress, Streams } from "./internal/workerState.js"
import { LifecycleStore } from "./LifecycleStore.js"
import { NotificationListener } from "./NotificationListener.js"
import * as OutageLog from "./internal/outageLog.js"
import type * as Perspective from "./Perspective.js"
import * as PerspectiveRegistry from "./PerspectiveRegistry.js"
import * as PerspectiveRewinder from "./PerspectiveRewinder.js"
import { PerspectiveStore } from "./PerspectiveStore.js"
import * as ProcessedEventCache from "./ProcessedEventCache.js"
import * as Receptor from "./Receptor.js"
import { WorkCoordinator } from "./WorkCoordinator.js"
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
  /**
   * After a (stream, perspective) committed applied events. Runs for every commit reported to the worker, also when
   * the worker is being stopped right after it (a stop interrupts a statement in flight, then lets the hooks of what
   * was committed run). Runs uninterruptibly: keep it short.
   */
  readonly onPerspectiveEventProcessed?: (group: ProcessedGroup) => Effect.Effect<void>
  /** After an apply failed and the failure was recorded (also when the worker is being stopped, as above). */
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
 * A worker configuration as {@link decode} leaves it: the options decoded (defaults filled, durations as
 * `Duration`s) and the perspectives validated into their registry. {@link makeDecoded} and {@link layerDecoded}
 * take it as it is, without checking anything again.
 *
 * @category models
 * @since 0.5.0
 */
export interface Decoded extends Omit<Config, "options"> {
  readonly options: WorkerOptions.WorkerOptions
  readonly registry: PerspectiveRegistry.Shape
}

/**
 * What {@link decode} refuses.
 *
 * @category errors
 * @since 0.5.0
 */
export type DecodeError =
  | WorkerOptions.InvalidWorkerOptions
  | WorkerConfigurationError
  | DefinitionErrors.PerspectiveDefinitionError
  | EventRegistry.InvalidEventDefinition
  | Receptor.InvalidReceptor

/**
 * Checks a worker configuration without starting anything, once: options, perspective names and the wiring of
 * perspectives and receptors to event definitions. `make` runs it; compositions that touch the database first
 * (migrations) run it before and hand the result to {@link layerDecoded}, so a refused start leaves the database
 * untouched and nothing is decoded twice.
 *
 * @category constructors
 * @since 0.5.0
 */
export const decode = (config: Config): Effect.Effect<Decoded, DecodeError> =>
  Effect.gen(function* () {
    const options = yield* WorkerOptions.decode(config.options ?? {})
    // Definitions are plain values: this is where their mistakes surface, before any wiring is checked.
    yield* EventRegistry.validate(config.events)
    yield* Effect.forEach(config.receptors ?? [], Receptor.validate, { discard: true })
    yield* checkWiring(config)
    const registry = yield* PerspectiveRegistry.make(config.perspectives)
    return { ...config, options, registry }
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

/**
 * Starts the worker's fibers in the current scope: the claim loop (`internal/claimLoop.ts`) and
 * `maxConcurrentDrainConsumers` consumers (`internal/drainConsumer.ts`), sharing the state of
 * `internal/workerState.ts`. The configuration is checked first ({@link decode}).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (config: Config) => Effect.flatMap(decode(config), makeDecoded)

/**
 * {@link make} for a configuration {@link decode} checked already.
 *
 * @category constructors
 * @since 0.5.0
 */
export const makeDecoded = (config: Decoded) =>
  Effect.gen(function* () {
    const ctx = yield* makeContext(config)
    const listener = yield* Effect.serviceOption(NotificationListener)
    const { instanceId, options, perspectives } = ctx.deps
    yield* Effect.logInfo(`perspective worker starting: instance ${instanceId}, perspectives ${perspectives.names.join(", ") || "(none)"}`)
    // A listener that confirms it listens (its subscription's first wake-up): the first claim runs after that, and
    // the confirmation is not a wake-up — the claim sees everything notified before it, later appends notify. Not
    // confirmed within `listenGrace` (a LISTEN connection still opening): the first claim runs, and the
    // confirmation, when it comes, is an ordinary wake-up (something may have been appended meanwhile).
    const listening = yield* Deferred.make<void>()
    let confirmationDue = Option.isSome(listener) && listener.value.confirmsListening === true
    if (!confirmationDue) yield* Deferred.succeed(listening, undefined)
    if (Option.isSome(listener)) {
      yield* Effect.forkScoped(
        Stream.runForEach(listener.value.wakeUps, () =>
          Effect.suspend(() => {
            if (!confirmationDue) return Queue.offer(ctx.wake, undefined)
            confirmationDue = false
            return Deferred.succeed(listening, undefined)
          })
        )
      )
    }
    const listened = Effect.andThen(
      Effect.timeoutOption(Deferred.await(listening), listenGrace),
      Effect.sync(() => {
        confirmationDue = false
      })
    )
    // Orphaned lifecycles (all perspectives done, stages never fired: a crash) are fired before new work.
    yield* ctx.reconcileLifecycles
    yield* Effect.forkScoped(Effect.andThen(listened, claimLoop(ctx)))
    yield* Effect.replicateEffect(Effect.forkScoped(drainConsumer(ctx)), options.maxConcurrentDrainConsumers, { discard: true })

    const awaitIdle = Effect.gen(function* () {
      const start = (yield* SubscriptionRef.get(ctx.progress)).polls
      yield* Queue.offer(ctx.wake, undefined)
      yield* SubscriptionRef.changes(ctx.progress).pipe(
        Stream.takeUntil((s) => s.polls >= start + options.idleThresholdPolls && s.emptyPolls >= options.idleThresholdPolls),
        Stream.runDrain
      )
    })

    return PerspectiveWorker.of({
      requestImmediatePoll: Queue.offer(ctx.wake, undefined).pipe(Effect.asVoid),
      isIdle: Effect.map(SubscriptionRef.get(ctx.progress), (s) => s.idle),
      consecutiveEmptyPolls: Effect.map(SubscriptionRef.get(ctx.progress), (s) => s.emptyPolls),
      awaitIdle,
      awaitPolls: (count) =>
        SubscriptionRef.changes(ctx.progress).pipe(
          Stream.takeUntil((s) => s.polls >= count),
          Stream.runDrain
        ),
      stats: Effect.map(SubscriptionRef.get(ctx.progress), ({ deduped, eventsApplied, failures, polls }) => ({
        polls,
        eventsApplied,
        failures,
        deduped
      }))
    })
  })

/** The loops' shared context, from the decoded config and the services in context. */
const makeContext = (config: Decoded) =>
  Effect.gen(function* () {
    const options = config.options
    // The durations in numbers, once: the loops work in seconds (SQL leases) and milliseconds.
    const leaseSeconds = Duration.toSeconds(options.lease)
    const leaseMillis = Duration.toMillis(options.lease)
    const { instanceId } = yield* InstanceProvider
    const listener = yield* Effect.serviceOption(NotificationListener)
    const deps: CycleDeps = {
      instanceId,
      coordinator: yield* WorkCoordinator,
      store: yield* PerspectiveStore,
      perspectives: config.registry,
      events: config.events,
      cache: yield* ProcessedEventCache.make({
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
      }),
      options,
      strategy: config.completionStrategy ?? "batched",
      // Required, never optional: a worker without one would leave late-arrival streams flagged and unapplied.
      rewinder: yield* PerspectiveRewinder.PerspectiveRewinder
    }
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
    const pollMillis = Option.isSome(listener)
      ? Math.max(Duration.toMillis(options.pollingInterval), Duration.toMillis(options.notifyHealthyPollingInterval))
      : Duration.toMillis(options.pollingInterval)
    const ctx: WorkerContext = {
      deps,
      hooks: config.hooks ?? {},
      lifecycle,
      reconcileLifecycles: reconcileLog.guard(
        Effect.asVoid(
          Effect.tap(completeLifecycles(lifecycle), (n) => (n > 0 ? Effect.logInfo(`fired ${n} orphaned lifecycle(s)`) : Effect.void))
        ),
        undefined
      ),
      progress: yield* SubscriptionRef.make(initialProgress),
      // A stream that could not move is held back for the idle threshold plus one poll; forgotten after a lease.
      streams: new Streams(pollMillis * (options.idleThresholdPolls + 1), leaseMillis),
      drain: yield* Queue.bounded<string>(Math.max(options.maxStreamsPerBatch * 2, 64)),
      wake: yield* Queue.sliding<void>(1),
      notified: Option.isSome(listener),
      pollMillis,
      leaseSeconds,
      logs: {
        claim: yield* OutageLog.make("claiming work"),
        lease: yield* OutageLog.make("renewing stream leases"),
        cycle: yield* OutageLog.make("perspective cycle"),
        stages: yield* OutageLog.make("lifecycle stages")
      }
    }
    return ctx
  })

/** How long a worker's first claim waits for its listener to confirm it listens (`confirmsListening`). */
const listenGrace = Duration.seconds(1)

/**
 * The worker as a layer; its fibers live as long as the layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (config: Config) => Layer.effect(PerspectiveWorker, make(config))

/**
 * The worker as a layer, for a configuration {@link decode} checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerDecoded = (config: Decoded) => Layer.effect(PerspectiveWorker, makeDecoded(config))

/**
 * Completes once the {@link PerspectiveWorker} in context is idle: `yield* PerspectiveWorker.awaitIdle`.
 *
 * @category accessors
 * @since 0.1.0
 */
export const awaitIdle: Effect.Effect<void, never, PerspectiveWorker> = Effect.flatMap(PerspectiveWorker, (worker) => worker.awaitIdle)
