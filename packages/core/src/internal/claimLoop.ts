/**
 * The worker's claim loop: leases streams with pending work (`claimAndFetch` when the coordinator has it: the claim
 * then also fetches their events, for their first cycle) and queues them for the consumers. It polls again at once
 * when a claim was full, else on a wake-up (NOTIFY, a consumer done, `requestImmediatePoll`) or the safety-net poll.
 */
import { Clock, Duration, Effect, Queue, SubscriptionRef } from "effect"
import { fetchOptions } from "./cycleReads.js"
import { emptyTick, runHook, type WorkerContext } from "./workerContext.js"
import { type Progress, polled, settled, verdict } from "./workerState.js"

const claimOnce = (ctx: WorkerContext) =>
  Effect.gen(function* () {
    const { deps, streams } = ctx
    const { coordinator, options } = deps
    const request = {
      instanceId: deps.instanceId,
      maxStreams: options.maxStreamsPerBatch,
      leaseSeconds: ctx.leaseSeconds,
      perspectiveNames: deps.perspectives.names,
      exclude: streams.exclusions(yield* Clock.currentTimeMillis)
    }
    // A coordinator that can fetches what it claims in the same call: the claimed streams' first cycle starts
    // with their events (one round trip less between an append and its read models).
    let tookAll = false
    streams.claimStarts()
    const claimed = yield* (
      coordinator.claimAndFetch === undefined
        ? coordinator.claimWork(request)
        : Effect.map(coordinator.claimAndFetch({ ...request, ...fetchOptions(deps) }), ({ pending, streams: ids }) => {
            streams.prefetch(ids, pending)
            return ids
          })
    ).pipe(
      Effect.tap((ids) =>
        Effect.sync(() => {
          tookAll = request.exclude.length === 0 && ids.length < options.maxStreamsPerBatch
        })
      ),
      (claim) => ctx.logs.claim.guard(claim, [] as ReadonlyArray<string>),
      Effect.ensuring(Effect.sync(() => streams.claimEnds(tookAll)))
    )
    const previous = yield* SubscriptionRef.get(ctx.progress)
    const next = verdict(previous, streams.pollOutcome(claimed), options.idleThresholdPolls)
    // Lifecycles whose last perspective completed outside a cycle's own check (a dead letter, a crash) are
    // fired when the worker turns idle — before it says so, so waiting for idle also waits for them.
    if (!previous.idle && next.idle) yield* ctx.reconcileLifecycles
    yield* announce(ctx, yield* SubscriptionRef.getAndUpdate(ctx.progress, (p) => polled(p, next)), next.idle)
    const fresh = streams.enqueue(claimed)
    yield* Queue.offerAll(ctx.drain, fresh)
    if (fresh.length === 0) yield* emptyTickDone(ctx)
    return fresh.length
  })

/** The hooks of a change between active and idle. */
const announce = (ctx: WorkerContext, before: Progress, idle: boolean) =>
  before.idle && !idle
    ? runHook(ctx.hooks.onWorkProcessingStarted, undefined)
    : !before.idle && idle
      ? runHook(ctx.hooks.onWorkProcessingIdle, undefined)
      : Effect.void

/**
 * A tick that found no new work is still a completed tick (the reference: "whether or not work was found"). An idle
 * worker also lets expired dedup entries go (cycles evict too; each call costs O(evicted + 1)).
 */
const emptyTickDone = (ctx: WorkerContext) =>
  Effect.andThen(ctx.deps.cache.evictExpired, runHook(ctx.hooks.onBatchCycleComplete, emptyTick))

/**
 * The verdict of an empty claim, without running one, when a consumer finds the worker settled (`Streams.afterRelease`):
 * nothing queued or in a cycle, the last claim took every claimable stream, and nothing woke the claim loop since —
 * an empty claim would find nothing there. `polls` counts claims only, so it stays. A tenant whose work one claim took
 * is let go after that claim, not after two more empty ones (bench t).
 */
export const settle = (ctx: WorkerContext) =>
  Effect.gen(function* () {
    const { deps, streams } = ctx
    const threshold = deps.options.idleThresholdPolls
    const previous = yield* SubscriptionRef.get(ctx.progress)
    if (verdict(previous, streams.pollOutcome([]), threshold).idle && !previous.idle) yield* ctx.reconcileLifecycles
    // A claim that started meanwhile (a wake-up) gives the verdict instead.
    if (streams.afterRelease(true) !== "settle") return
    let idle = false
    const before = yield* SubscriptionRef.getAndUpdate(ctx.progress, (p) => {
      const next = verdict(p, streams.pollOutcome([]), threshold)
      idle = next.idle
      return settled(p, next)
    })
    yield* announce(ctx, before, idle)
    yield* emptyTickDone(ctx)
  })

/** Claims forever: at once after a full claim, else on a wake-up or after the poll interval. */
export const claimLoop = (ctx: WorkerContext) =>
  Effect.forever(
    Effect.flatMap(claimOnce(ctx), (count) =>
      count >= ctx.deps.options.maxStreamsPerBatch
        ? Effect.void
        : Effect.race(Effect.sleep(Duration.millis(ctx.pollMillis)), Queue.take(ctx.wake))
    )
  )
