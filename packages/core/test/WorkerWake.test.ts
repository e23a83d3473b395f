/**
 * Wake and batching logic of the worker, under TestClock: no time passes unless the test moves it, so a window
 * or poll that would hold work back makes the test hang (and fail) instead of passing slowly.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Option, Queue } from "effect"
import { TestClock } from "effect/testing"
import * as EventId from "../src/EventId.js"
import * as EventStore from "../src/EventStore.js"
import * as MemoryPipeline from "../src/MemoryPipeline.js"
import * as PerspectiveStore from "../src/PerspectiveStore.js"
import * as PerspectiveWorker from "../src/PerspectiveWorker.js"
import { Counted, count, events } from "./fixtures/counted.js"

describe("PerspectiveWorker wake-up and batching (default options)", () => {
  it.effect("an idle worker applies the first arrival at once: no sliding window, no poll", () =>
    Effect.gen(function* () {
      const processed = yield* Deferred.make<void>()
      yield* Effect.gen(function* () {
        // Started: the first poll is done, and the NOTIFY subscription (forked before it) is listening.
        yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitPolls(1)
        const id = EventId.unsafeMake()
        yield* (yield* EventStore.EventStore).append(id, [Counted.make({ id })])
        yield* Deferred.await(processed) // the clock never moves: a 300 ms window would never close
        const row = yield* (yield* PerspectiveStore.PerspectiveStore).getById("count", id)
        expect(Option.getOrThrow(row).data).toEqual({ n: 1 })
      }).pipe(
        Effect.provide(
          MemoryPipeline.layer({
            events,
            perspectives: [count],
            hooks: { onPerspectiveEventProcessed: () => Deferred.succeed(processed, undefined) }
          })
        ),
        Effect.scoped
      )
    })
  )

  it.effect("onBatchCycleComplete fires on every tick, also the empty ones", () =>
    Effect.gen(function* () {
      const ticks = yield* Queue.unbounded<PerspectiveWorker.CycleSummary>()
      yield* Effect.gen(function* () {
        yield* TestClock.adjust(Duration.seconds(1)) // the safety-net poll (1 s by default)
        yield* TestClock.adjust(Duration.seconds(1))
        const seen = yield* Queue.takeN(ticks, 3) // start-up poll + two safety-net polls, none found work
        expect(seen).toEqual(Array.from({ length: 3 }, () => ({ streams: 0, eventsApplied: 0, failures: 0, deduped: 0 })))
      }).pipe(
        Effect.provide(
          MemoryPipeline.layer({ events, perspectives: [count], hooks: { onBatchCycleComplete: (s) => Queue.offer(ticks, s) } })
        ),
        Effect.scoped
      )
    })
  )
  it.effect("the dedup cache is evicted as the worker runs: entries go once their TTL (lease) has passed", () =>
    Effect.gen(function* () {
      const processed = yield* Deferred.make<void>()
      const evicted = yield* Deferred.make<number>()
      yield* Effect.gen(function* () {
        yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitPolls(1)
        const id = EventId.unsafeMake()
        yield* (yield* EventStore.EventStore).append(id, [Counted.make({ id }), Counted.make({ id })])
        yield* Deferred.await(processed)
        yield* TestClock.adjust(Duration.seconds(61)) // past the 60 s TTL; the idle worker keeps polling meanwhile
        expect(yield* Deferred.await(evicted)).toBe(2)
      }).pipe(
        Effect.provide(
          MemoryPipeline.layer({
            events,
            perspectives: [count],
            options: { lease: Duration.seconds(60) },
            hooks: { onPerspectiveEventProcessed: () => Deferred.succeed(processed, undefined) },
            dedupObserver: { evicted: (n) => Deferred.succeed(evicted, n) }
          })
        ),
        Effect.scoped
      )
    })
  )

  it.effect("the worker retains at most one full cycle's work ids (maxStreamsPerBatch x perspectiveBatchSize x perspectives)", () =>
    Effect.gen(function* () {
      const evictions: Array<number> = []
      const cycles = yield* Queue.unbounded<PerspectiveWorker.CycleSummary>()
      yield* Effect.gen(function* () {
        const worker = yield* PerspectiveWorker.PerspectiveWorker
        yield* worker.awaitPolls(1)
        const store = yield* EventStore.EventStore
        // Five streams one after another, each applied (and its completion acknowledged) before the next.
        for (let i = 0; i < 5; i++) {
          const id = EventId.unsafeMake()
          yield* store.append(id, [Counted.make({ id }), Counted.make({ id })])
          yield* Queue.take(cycles) // after the cycle's completion, retention and eviction
        }
        // The bound is 2 x 2 x 1 = 4 ids: of the 10 acknowledged, the 6 oldest went, all well within the 300 s TTL.
        expect(evictions.reduce((a, b) => a + b, 0)).toBe(6)
      }).pipe(
        Effect.provide(
          MemoryPipeline.layer({
            events,
            perspectives: [count],
            options: { maxStreamsPerBatch: 2, perspectiveBatchSize: 2 },
            hooks: { onBatchCycleComplete: (s) => (s.eventsApplied > 0 ? Queue.offer(cycles, s) : Effect.void) },
            dedupObserver: { evicted: (n) => Effect.sync(() => evictions.push(n)) }
          })
        ),
        Effect.scoped
      )
    })
  )

  it.effect("a deep stream's next pass waits for a stream claimed meanwhile: that one is applied in the next cycle", () =>
    Effect.gen(function* () {
      const deep = EventId.unsafeMake()
      const late = EventId.unsafeMake()
      const ports = yield* Deferred.make<{
        readonly worker: PerspectiveWorker.Shape
        readonly store: EventStore.EventStore["Service"]
      }>()
      const done = yield* Deferred.make<void>()
      let cycles = 0
      let appendedIn = -1
      let appliedIn = -1
      yield* Effect.gen(function* () {
        const worker = yield* PerspectiveWorker.PerspectiveWorker
        const store = yield* EventStore.EventStore
        yield* worker.awaitPolls(1)
        yield* Deferred.succeed(ports, { worker, store })
        // 500 events on one stream: passes of perspectiveBatchSize (100) on one consumer.
        yield* store.append(
          deep,
          Array.from({ length: 500 }, () => Counted.make({ id: deep }))
        )
        // One consumer batches what was already waiting with its sliding window: the test clock moves it.
        yield* Deferred.await(done).pipe(Effect.raceFirst(Effect.forever(TestClock.adjust(Duration.millis(1)))))
        // Without the yield the deep stream's second pass runs first, and the late stream waits a cycle more.
        expect(appliedIn - appendedIn).toBe(1)
        const rows = yield* (yield* PerspectiveStore.PerspectiveStore).getMany("count", [deep, late])
        expect(rows.get(late)?.data).toEqual({ n: 1 })
        // Nothing is left behind: the deep stream's rest is claimed again and applied.
        yield* worker.awaitIdle.pipe(Effect.raceFirst(Effect.forever(TestClock.adjust(Duration.millis(10)))))
        expect((yield* (yield* PerspectiveStore.PerspectiveStore).getMany("count", [deep])).get(deep)?.data).toEqual({ n: 500 })
      }).pipe(
        Effect.provide(
          MemoryPipeline.layer({
            events,
            perspectives: [count],
            options: { maxConcurrentDrainConsumers: 1, perspectiveBatchSize: 100, drainLoopMaxIterations: 5 },
            hooks: {
              onBatchCycleComplete: (summary) =>
                Effect.sync(() => {
                  if (summary.streams > 0) cycles++
                }),
              onPerspectiveEventProcessed: (group) =>
                Effect.gen(function* () {
                  if (group.streamId === late) {
                    appliedIn = cycles
                    yield* Deferred.succeed(done, undefined)
                  }
                  if (group.streamId !== deep || appendedIn >= 0) return
                  // After the deep stream's first pass, another stream gets work, and the claim loop claims it while
                  // the consumer is still on the deep one: the second poll begins after the append.
                  appendedIn = cycles
                  const { store, worker } = yield* Deferred.await(ports)
                  yield* Effect.orDie(store.append(late, [Counted.make({ id: late })]))
                  const { polls } = yield* worker.stats
                  yield* worker.requestImmediatePoll
                  yield* worker.awaitPolls(polls + 1)
                  yield* worker.requestImmediatePoll
                  yield* worker.awaitPolls(polls + 2)
                })
            }
          })
        ),
        Effect.scoped
      )
    })
  )
})
