/**
 * A consumer loop of the worker: takes drained streams (at once when idle, batched with the sliding window only
 * while every other consumer is busy), skips those another consumer is running, and runs their cycles — fetch,
 * dedup, apply, commit — then the hooks and lifecycle stages. A stream whose group filled `perspectiveBatchSize` is
 * drained again at once, up to `drainLoopMaxIterations`, unless other claimed streams wait for a consumer: then
 * its rest is claimed again after them.
 */
import { Clock, Duration, Effect, Queue, SubscriptionRef } from "effect"
import * as SlidingWindowBatcher from "./slidingWindowBatcher.js"
import type { PendingEvent } from "../WorkCoordinator.js"
import { settle } from "./claimLoop.js"
import { afterCycle } from "./lifecycle.js"
import { type CycleResult, runCycle } from "./workerCycle.js"
import { runHook, type WorkerContext } from "./workerContext.js"
import { cycled, working } from "./workerState.js"

const appliedIn = (result: CycleResult) => result.processed.reduce((n, g) => n + g.eventIds.length, 0)

/**
 * A cycle that outlives a third of the lease (a slow apply, a slow commit) renews its streams' leases until it
 * ends, so no other instance takes them over meanwhile. A lease already lost stays lost: the commit is fenced.
 */
const withLeaseRenewal = <A, E>(ctx: WorkerContext, streamIds: ReadonlyArray<string>, cycle: Effect.Effect<A, E>): Effect.Effect<A, E> => {
  const { coordinator, instanceId } = ctx.deps
  const renewEvery = Duration.millis(Math.max(1, Math.floor((ctx.leaseSeconds * 1000) / 3)))
  const renew = ctx.logs.lease.guard(
    Effect.tap(coordinator.renewStreamLeases({ instanceId, streamIds, leaseSeconds: ctx.leaseSeconds }), (held) =>
      held.length < streamIds.length
        ? Effect.logWarning(
            `lost the lease on ${streamIds.length - held.length} stream(s) during a long cycle; their work is redone by the new owner`
          )
        : Effect.void
    ),
    undefined
  )
  // The renewal loop is interruptible wherever it was forked (the cycle may run uninterruptibly): ending the scope
  // must stop it.
  return Effect.scoped(Effect.andThen(Effect.forkScoped(Effect.interruptible(Effect.forever(Effect.delay(renew, renewEvery)))), cycle))
}

/** What a cycle committed, told: the counters, then the hooks of every committed group and reported failure. */
const reportCommitted = (ctx: WorkerContext, result: CycleResult) =>
  Effect.gen(function* () {
    const { hooks } = ctx
    yield* SubscriptionRef.update(ctx.progress, (p) =>
      cycled(p, { eventsApplied: appliedIn(result), failures: result.failures.length, deduped: result.deduped })
    )
    yield* Effect.forEach(result.processed, (group) => runHook(hooks.onPerspectiveEventProcessed, group), { discard: true })
    yield* Effect.forEach(result.failures, (failure) => runHook(hooks.onPerspectiveEventFailed, failure), { discard: true })
  })

/** What else a cycle's result means for the worker: lifecycle stages, the batch hook, stalled streams. */
const afterResult = (ctx: WorkerContext, batch: ReadonlyArray<string>, result: CycleResult) =>
  Effect.gen(function* () {
    const { hooks } = ctx
    const eventsApplied = appliedIn(result)
    yield* ctx.logs.stages.guard(afterCycle(ctx.lifecycle, result.processed, []), undefined)
    yield* runHook(hooks.onBatchCycleComplete, {
      streams: batch.length,
      eventsApplied,
      failures: result.failures.length,
      deduped: result.deduped
    })
    // A stuck stream that moved again (its rewind ran) is work: the worker is not idle until it is drained.
    if (ctx.streams.cycled(batch, new Set(result.stalled), yield* Clock.currentTimeMillis)) {
      const before = yield* SubscriptionRef.getAndUpdate(ctx.progress, working)
      if (before.idle) yield* runHook(hooks.onWorkProcessingStarted, undefined)
    }
  })

const processStreams = (
  ctx: WorkerContext,
  streamIds: ReadonlyArray<string>,
  prefetched: ReadonlyMap<string, ReadonlyArray<PendingEvent>>
): Effect.Effect<void> =>
  Effect.gen(function* () {
    const { options } = ctx.deps
    let batch = streamIds
    for (let iteration = 0; iteration < options.drainLoopMaxIterations && batch.length > 0; iteration++) {
      // The claim's fetch serves the first pass only; later passes fetch what is pending then.
      // Interruptible only in its statements: once a report to the coordinator returned, the hooks of what it
      // committed (which signal read-your-writes waiters) run, even when the worker is being stopped (a tenant let
      // go, a deploy).
      const result = yield* Effect.uninterruptibleMask((restore) =>
        Effect.tap(withLeaseRenewal(ctx, batch, runCycle(ctx.deps, batch, iteration === 0 ? prefetched : undefined, restore)), (result) =>
          reportCommitted(ctx, result)
        )
      )
      yield* afterResult(ctx, batch, result)
      batch = result.more.length >= options.drainLoopRefetchMinBatch || (result.more.length > 0 && iteration === 0) ? result.more : []
      // Streams claimed and waiting for a consumer (in the drain queue or an open batch) go first: a deep
      // stream's or a rebuild's next pass is claimed again after them, so no stream waits out several passes.
      if (batch.length > 0 && ctx.streams.othersWaiting()) break
    }
    // Whatever is left is claimed again by the next poll; ask for it now.
    if (batch.length > 0) yield* Queue.offer(ctx.wake, undefined)
    return true
  }).pipe(
    // A failed cycle's work is delivered again: claim it again now.
    (cycles) => ctx.logs.cycle.guard(cycles, false),
    Effect.flatMap((done) => (done ? Effect.void : Effect.asVoid(Queue.offer(ctx.wake, undefined))))
  )

/** One consumer, forever. */
export const drainConsumer = (ctx: WorkerContext) => {
  const { options } = ctx.deps
  return Effect.forever(
    Effect.gen(function* () {
      const { items } = yield* SlidingWindowBatcher.take(ctx.drain, {
        slidingWindow: options.drainBatcher.slidingWindow,
        maxWait: options.drainBatcher.maxWait,
        maxSize: options.drainBatcher.maxSize,
        // The window batches only while work is flowing: an idle consumer applies the first arrival at once,
        // and a batch stays open only while every other consumer is in a cycle (waiting while one is free only
        // adds latency). So a lone append is never held back, and a saturated worker still builds large batches.
        eagerWhenIdle: true,
        keepOpen: () => ctx.streams.inCycle() >= options.maxConcurrentDrainConsumers - 1
      })
      const batch = ctx.streams.take(items)
      yield* processStreams(ctx, batch.mine, batch.prefetched).pipe(Effect.ensuring(Effect.sync(() => ctx.streams.release(items, batch))))
      // Events that arrived for these streams while they were queued were left out of any claim run meanwhile:
      // claim them now. With no claim since the one that took every claimable stream, and wake-ups heard, an empty
      // claim would find nothing: the last consumer to finish gives its verdict without running it.
      const next = (yield* Queue.size(ctx.wake)) > 0 ? "none" : ctx.streams.afterRelease(ctx.notified)
      if (next === "claim") yield* Queue.offer(ctx.wake, undefined)
      else if (next === "settle") yield* settle(ctx)
    })
  )
}
