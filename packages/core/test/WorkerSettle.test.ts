/**
 * A worker whose claim took every claimable stream settles without another claim: when the last consumer lets its
 * streams go and nothing woke the claim loop since, an empty claim would find nothing, so none runs (a tenant's
 * burst costs one claim, not three). Under TestClock: no safety-net poll runs unless the test moves the clock, so
 * work left behind by a skipped claim makes the test hang (and fail) instead of passing slowly.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Ref, Schema } from "effect"
import * as EventDefinition from "../src/EventDefinition.js"
import * as EventId from "../src/EventId.js"
import * as EventRegistry from "../src/EventRegistry.js"
import * as EventStore from "../src/EventStore.js"
import * as MemoryPipeline from "../src/MemoryPipeline.js"
import * as Perspective from "../src/Perspective.js"
import * as PerspectiveWorker from "../src/PerspectiveWorker.js"

const Counted = EventDefinition.make("Counted", { payload: Schema.Struct({ id: Schema.String }), streamId: (p) => p.id })
const events = EventRegistry.make([Counted])
const count = Perspective.make({
  name: "count",
  events: [Counted],
  model: Schema.Struct({ n: Schema.Number }),
  initial: { n: 0 },
  apply: { Counted: (m) => ({ n: m.n + 1 }) }
})

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
      const store = yield* Deferred.make<EventStore.EventStore["Service"]>()
      const applied = yield* Ref.make(0)
      yield* Effect.gen(function* () {
        const worker = yield* PerspectiveWorker.PerspectiveWorker
        yield* Deferred.succeed(store, yield* EventStore.EventStore)
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
              // After the first commit, while its consumer still holds the stream: append to the same stream (its
              // wake-up's claim leaves the stream out).
              onPerspectiveEventProcessed: (group) =>
                Effect.gen(function* () {
                  const total = yield* Ref.updateAndGet(applied, (n) => n + group.eventIds.length)
                  if (total >= 2) return yield* Deferred.succeed(second, undefined)
                  const events = yield* Deferred.await(store)
                  yield* Effect.orDie(events.append(group.streamId, [Counted.make({ id: group.streamId })]))
                })
            }
          })
        ),
        Effect.scoped
      )
    })
  )
})
