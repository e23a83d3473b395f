import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as EventCompletionAwaiter from "../src/EventCompletionAwaiter.js"
import * as SyncEventTracker from "../src/SyncEventTracker.js"
import { isRunning, start, uuid } from "./support.js"

const { SyncEventTracker: Tracker } = SyncEventTracker
const { EventCompletionAwaiter: Awaiter } = EventCompletionAwaiter
const provided = <A, E>(effect: Effect.Effect<A, E, EventCompletionAwaiter.EventCompletionAwaiter | SyncEventTracker.SyncEventTracker>) =>
  Effect.provide(effect, EventCompletionAwaiter.layer.pipe(Layer.provideMerge(SyncEventTracker.layer)))
const track = (eventId: string, ...perspectives: Array<string>) =>
  Effect.flatMap(Tracker, (t) =>
    Effect.forEach(perspectives, (perspectiveName) => t.trackEvent({ eventId, perspectiveName, streamId: uuid(), eventType: "T" }))
  )

describe("EventCompletionAwaiter", () => {
  it.effect("immediate for empty, absent or untracked events", () =>
    provided(
      Effect.gen(function* () {
        const awaiter = yield* Awaiter
        const fibers = [
          yield* start(awaiter.waitForEvents([])),
          yield* start(awaiter.waitForEvents(undefined)),
          yield* start(awaiter.waitForEvents([uuid()]))
        ]
        expect(fibers.map(isRunning)).toEqual([false, false, false])
        expect((yield* Fiber.joinAll(fibers)).map((r) => r._tag)).toEqual(["NoPendingEvents", "NoPendingEvents", "NoPendingEvents"])
      })
    )
  )

  it.effect("waits until all perspectives of all given events completed", () =>
    provided(
      Effect.gen(function* () {
        const [awaiter, tracker] = [yield* Awaiter, yield* Tracker]
        const [e1, e2] = [uuid(), uuid()]
        yield* track(e1, "A", "B")
        yield* track(e2, "A")
        const fiber = yield* start(awaiter.waitForEvents([e1, e2]))
        yield* tracker.markProcessedByPerspective([e1, e2], "A")
        expect(isRunning(fiber)).toBe(true)
        yield* tracker.markProcessedByPerspective([e1], "B")
        expect((yield* Fiber.join(fiber))._tag).toBe("Synced")
      })
    )
  )

  it.effect("times out with TimedOut, naming what is still pending", () =>
    provided(
      Effect.gen(function* () {
        const e = uuid()
        yield* track(e, "A")
        const fiber = yield* start(Effect.flatMap(Awaiter, (a) => a.waitForEvents([e], { timeout: "3 seconds" })))
        yield* TestClock.adjust("2999 millis")
        expect(isRunning(fiber)).toBe(true)
        yield* TestClock.adjust(1)
        expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "TimedOut", pending: [e] })
      })
    )
  )

  it.effect("cancellation: interruption removes the waiter; unregistering its awaiter id ends it TimedOut", () =>
    provided(
      Effect.gen(function* () {
        const [awaiter, tracker] = [yield* Awaiter, yield* Tracker]
        const e = uuid()
        yield* track(e, "A")
        const interrupted = yield* start(awaiter.waitForEvents([e]))
        yield* Fiber.interrupt(interrupted)
        expect((yield* tracker.stats).waiters).toBe(0)
        const cancelled = yield* start(awaiter.waitForEvents([e], { awaiterId: "rpc-1" }))
        yield* tracker.unregisterAwaiter("rpc-1")
        expect((yield* Fiber.join(cancelled))._tag).toBe("TimedOut")
      })
    )
  )

  it.effect("areEventsFullyProcessed is true only when no perspective remains", () =>
    provided(
      Effect.gen(function* () {
        const [awaiter, tracker] = [yield* Awaiter, yield* Tracker]
        const [e1, e2] = [uuid(), uuid()]
        yield* track(e1, "A", "B")
        yield* track(e2, "A")
        expect(yield* awaiter.areEventsFullyProcessed([e1, e2])).toBe(false)
        yield* tracker.markProcessedByPerspective([e1, e2], "A")
        expect(yield* awaiter.areEventsFullyProcessed([e1, e2])).toBe(false)
        expect(yield* awaiter.areEventsFullyProcessed([e2])).toBe(true)
        yield* tracker.markProcessedByPerspective([e1], "B")
        expect(yield* awaiter.areEventsFullyProcessed([e1, e2])).toBe(true)
        expect(yield* awaiter.areEventsFullyProcessed([])).toBe(true)
      })
    )
  )

  it.effect("ids that are not UUIDs and negative timeouts are typed errors at the call, never a wait", () =>
    provided(
      Effect.gen(function* () {
        const awaiter = yield* Awaiter
        expect(yield* Effect.flip(awaiter.waitForEvents(["not-a-uuid"]))).toMatchObject({
          _tag: "SyncArgumentError",
          reason: { _tag: "InvalidEventId" }
        })
        expect(yield* Effect.flip(awaiter.waitForEvents([uuid()], { timeout: -1 }))).toMatchObject({ reason: { _tag: "InvalidTimeout" } })
        expect(yield* Effect.flip(awaiter.areEventsFullyProcessed(["x"]))).toMatchObject({ reason: { _tag: "InvalidEventId" } })
      })
    )
  )
})
