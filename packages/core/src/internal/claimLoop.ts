/**
 * The worker's claim loop: leases streams with pending work (`claimAndFetch` when the coordinator has it: the claim
 * then also fetches their events, for their first cycle) and queues them for the consumers. It polls again at once
 * when a claim was full, else on a wake-up (NOTIFY, a consumer done, `requestImmediatePoll`) or the safety-net poll.
 */
import { Clock, Duration, Effect, Queue, SubscriptionRef } from "effect"
import { fetchOptions } from "./cycleReads.js"
import { emptyTick, runHook, type WorkerContext } from "./workerContext.js"
import { polled, verdict } from "./workerState.js"

const claimOnce = (ctx: WorkerContext) =>
  Effect.gen(function* () {
    const { deps, hooks, progress, streams } = ctx
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
    const claimed = yield* (
      coordinator.claimAndFetch === undefined
        ? coordinator.claimWork(request)
        : Effect.map(coordinator.claimAndFetch({ ...request, ...fetchOptions(deps) }), ({ pending, streams: ids }) => {
            streams.prefetch(ids, pending)
            return ids
          })
    ).pipe((claim) => ctx.logs.claim.guard(claim, [] as ReadonlyArray<string>))
    const previous = yield* SubscriptionRef.get(progress)
    const next = verdict(previous, streams.pollOutcome(claimed), options.idleThresholdPolls)
    // Lifecycles whose last perspective completed outside a cycle's own check (a dead letter, a crash) are
    // fired when the worker turns idle — before it says so, so waiting for idle also waits for them.
    if (!previous.idle && next.idle) yield* ctx.reconcileLifecycles
    const before = yield* SubscriptionRef.getAndUpdate(progress, (p) => polled(p, next))
    if (before.idle && !next.idle) yield* runHook(hooks.onWorkProcessingStarted, undefined)
    if (!before.idle && next.idle) yield* runHook(hooks.onWorkProcessingIdle, undefined)
    const fresh = streams.enqueue(claimed)
    yield* Queue.offerAll(ctx.drain, fresh)
    // A tick that found no new work is still a completed tick (the reference: "whether or not work was found").
    // An idle worker also lets expired dedup entries go (cycles evict too; each call costs O(evicted + 1)).
    if (fresh.length === 0) yield* Effect.andThen(deps.cache.evictExpired, runHook(hooks.onBatchCycleComplete, emptyTick))
    return fresh.length
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
