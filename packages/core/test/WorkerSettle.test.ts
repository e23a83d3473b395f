/**
 * A worker whose claim took every claimable stream settles without another claim: when the last consumer lets its
 * streams go and nothing woke the claim loop since, an empty claim would find nothing, so none runs (a tenant's
 * burst costs one claim, not three). Under TestClock: no safety-net poll runs unless the test moves the clock, so
 * work left behind by a skipped claim makes the test hang (and fail) instead of passing slowly.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Layer, Ref } from "effect"
import { TestClock } from "effect/testing"
import * as EventId from "../src/EventId.js"
import * as EventStore from "../src/EventStore.js"
import * as InstanceProvider from "../src/InstanceProvider.js"
import * as MemoryPipeline from "../src/MemoryPipeline.js"
import * as NotificationListener from "../src/NotificationListener.js"
import * as PerspectiveRewinder from "../src/PerspectiveRewinder.js"
import * as PerspectiveStore from "../src/PerspectiveStore.js"
import * as PerspectiveWorker from "../src/PerspectiveWorker.js"
import * as WorkCoordinator from "../src/WorkCoordinator.js"
import { Counted, count, events } from "./fixtures/counted.js"

describe("PerspectiveWorker settles without an empty claim", () => {
  it.effect("a burst over several streams: one claim takes it, the worker turns idle with no claim after it", () =>
    Effect.gen(function* () {
      const idle = yield* Deferred.make<void>()
      const applied = yield* Ref.make(0)
      yield* Effect.gen(function* () {
        const worker = yield* PerspectiveWorker.PerspectiveWorker
        yield* worker.awaitPolls(1) // the start-up claim, which found nothing
        const store = yield* EventStore.EventStore
        const streams = Array.from({ length: 5 }, () => EventId.unsafeMake())
        // One append per stream, before the worker can claim (the fibers run when this one yields).
        yield* Effect.forEach(streams, (id) => store.append(id, [Counted.make({ id }), Counted.make({ id })]), { discard: true })
        yield* Deferred.await(idle)
        expect(yield* Ref.get(applied)).toBe(10)
        // The start-up claim, and the one that took the burst: the consumers' end needed no third.
        expect((yield* worker.stats).polls).toBe(2)
        expect(yield* worker.isIdle).toBe(true)
      }).pipe(
        Effect.provide(
          MemoryPipeline.layer({
            events,
            perspectives: [count],
            options: { idleThresholdPolls: 1 },
            hooks: {
              onPerspectiveEventProcessed: (group) => Ref.update(applied, (n) => n + group.eventIds.length),
              onWorkProcessingIdle: () => Deferred.succeed(idle, undefined).pipe(Effect.asVoid)
            }
          })
        ),
        Effect.scoped
      )
    })
  )

  it.effect("an event appended to a stream while it is in a cycle is claimed when the cycle ends, with no poll", () =>
    Effect.gen(function* () {
      const second = yield* Deferred.make<void>()
      const services = yield* Deferred.make<{
        readonly store: EventStore.EventStore["Service"]
        readonly worker: PerspectiveWorker.PerspectiveWorker["Service"]
      }>()
      const applied = yield* Ref.make(0)
      yield* Effect.gen(function* () {
        const worker = yield* PerspectiveWorker.PerspectiveWorker
        yield* Deferred.succeed(services, { store: yield* EventStore.EventStore, worker })
        yield* worker.awaitPolls(1)
        const id = EventId.unsafeMake()
        yield* (yield* EventStore.EventStore).append(id, [Counted.make({ id })])
        // The clock never moves: only a claim after the first cycle can find the second event.
        yield* Deferred.await(second)
        expect(yield* Ref.get(applied)).toBe(2)
      }).pipe(
        Effect.provide(
          MemoryPipeline.layer({
            events,
            perspectives: [count],
            options: { idleThresholdPolls: 1 },
            hooks: {
              // After the first commit, while its consumer still holds the stream: append to the same stream, and
              // let the claim its wake-up runs end first (it leaves the stream out, so it finds nothing).
              onPerspectiveEventProcessed: (group) =>
                Effect.gen(function* () {
                  const total = yield* Ref.updateAndGet(applied, (n) => n + group.eventIds.length)
                  if (total >= 2) return yield* Deferred.succeed(second, undefined)
                  const { store, worker } = yield* Deferred.await(services)
                  const polls = (yield* worker.stats).polls
                  yield* Effect.orDie(store.append(group.streamId, [Counted.make({ id: group.streamId })]))
                  yield* worker.awaitPolls(polls + 1)
                })
            }
          })
        ),
        Effect.scoped
      )
    })
  )
})

/** A memory listener that says it confirms listening: its first wake-up is the confirmation, published by the test. */
const confirmingListener = Layer.effectContext(
  Effect.gen(function* () {
    const memory = yield* Layer.build(NotificationListener.layerMemory)
    const listener = Context.get(memory, NotificationListener.NotificationListener)
    return Context.make(NotificationListener.NotificationListener, { ...listener, confirmsListening: true }).pipe(
      Context.add(NotificationListener.Memory, Context.get(memory, NotificationListener.Memory))
    )
  })
)

const memoryPorts = Layer.effectContext(
  Effect.gen(function* () {
    const { coordinator } = yield* WorkCoordinator.makeMemory
    const store = yield* PerspectiveStore.makeMemory
    return Context.make(WorkCoordinator.WorkCoordinator, coordinator).pipe(Context.add(PerspectiveStore.PerspectiveStore, store))
  })
)

/** The worker over the memory ports and {@link confirmingListener}. */
const confirmingWorker = PerspectiveWorker.layer({ events, perspectives: [count] }).pipe(
  Layer.provideMerge(confirmingListener),
  Layer.provideMerge(memoryPorts),
  Layer.provideMerge(PerspectiveRewinder.layerUnsupported),
  Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "memory" }))
)

describe("PerspectiveWorker's first claim and a listener that confirms it listens", () => {
  it.effect("never confirmed: the first claim runs after the 1 s grace; a late confirmation is an ordinary wake-up", () =>
    Effect.gen(function* () {
      yield* Effect.gen(function* () {
        const worker = yield* PerspectiveWorker.PerspectiveWorker
        const wake = yield* NotificationListener.Memory
        yield* Effect.yieldNow
        expect((yield* worker.stats).polls).toBe(0)
        yield* TestClock.adjust(Duration.millis(999))
        expect((yield* worker.stats).polls).toBe(0)
        yield* TestClock.adjust(Duration.millis(1))
        yield* worker.awaitPolls(1)
        // The confirmation after the grace: something may have been appended meanwhile, so it claims.
        yield* wake.notify()
        yield* worker.awaitPolls(2)
      }).pipe(Effect.provide(confirmingWorker), Effect.scoped)
    })
  )

  it.effect("confirmed: the first claim runs after the confirmation, which claims nothing more", () =>
    Effect.gen(function* () {
      yield* Effect.gen(function* () {
        const worker = yield* PerspectiveWorker.PerspectiveWorker
        const wake = yield* NotificationListener.Memory
        yield* Effect.yieldNow
        yield* wake.notify()
        yield* worker.awaitPolls(1)
        // Past the grace and the safety-net poll's start: only the start-up claim ran.
        yield* TestClock.adjust(Duration.millis(900))
        expect((yield* worker.stats).polls).toBe(1)
      }).pipe(Effect.provide(confirmingWorker), Effect.scoped)
    })
  )
})
