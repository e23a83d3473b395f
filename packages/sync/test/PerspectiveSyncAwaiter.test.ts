import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as EmittedEvents from "../src/EmittedEvents.js"
import * as EventCompletionAwaiter from "../src/EventCompletionAwaiter.js"
import * as InlineLifecycleStage from "../src/InlineLifecycleStage.js"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as SyncEventTracker from "../src/SyncEventTracker.js"
import * as SyncFilter from "../src/SyncFilter.js"
import { SyncInquiryPort } from "../src/SyncInquiryPort.js"
import * as TrackedEventTypeRegistry from "../src/TrackedEventTypeRegistry.js"
import { isRunning, uuid, waitersRegistered } from "./support.js"

const { SyncEventTracker: Tracker } = SyncEventTracker
const { PerspectiveSyncAwaiter: Awaiter } = PerspectiveSyncAwaiter
const layer = PerspectiveSyncAwaiter.layer.pipe(Layer.provideMerge(SyncEventTracker.layer))
const provided = <A, E>(effect: Effect.Effect<A, E, PerspectiveSyncAwaiter.PerspectiveSyncAwaiter | SyncEventTracker.SyncEventTracker>) =>
  Effect.provide(effect, layer)

/** Tracks the event for the perspective and records it in the current scope, as an append would. */
const emit = (perspectiveName: string, streamId: string, eventType = "OrderCreated") =>
  Effect.gen(function* () {
    const eventId = uuid()
    yield* ScopedEventTracker.trackEmittedEvent({ eventId, streamId, eventType })
    yield* (yield* Tracker).trackEvent({ eventId, streamId, eventType, perspectiveName })
    return eventId
  })
const mark = (ids: ReadonlyArray<string>, perspectiveName = "Orders") =>
  Effect.flatMap(Tracker, (t) => t.markProcessedByPerspective(ids, perspectiveName))
const wait = (builder: SyncFilter.SyncFilterBuilder, perspectiveName = "Orders") =>
  Effect.flatMap(Awaiter, (a) => a.wait(perspectiveName, builder))

describe("PerspectiveSyncAwaiter.wait", () => {
  it.effect("no tracked events -> NoPendingEvents", () =>
    provided(
      ScopedEventTracker.withScope(
        Effect.gen(function* () {
          expect((yield* wait(SyncFilter.currentScope()))._tag).toBe("NoPendingEvents")
          expect((yield* wait(SyncFilter.all()))._tag).toBe("NoPendingEvents")
        })
      )
    )
  )

  it.effect("currentScope outside a scope is a typed error naming how to open one, never NoPendingEvents", () =>
    provided(
      Effect.gen(function* () {
        const s = uuid()
        yield* ScopedEventTracker.withScope(emit("Orders", s)) // this process tracks a pending event of s
        const a = yield* Awaiter
        for (const filter of [SyncFilter.currentScope(), SyncFilter.forStream(s).andCurrentScope()]) {
          const error = yield* Effect.flip(a.wait("Orders", filter))
          expect(error).toMatchObject({ _tag: "SyncArgumentError", reason: { _tag: "NoScope", perspectiveName: "Orders" } })
          expect(error.message).toContain("ScopedEventTracker.withScope")
          expect((yield* Effect.flip(a.isCaughtUp("Orders", filter))).reason._tag).toBe("NoScope")
        }
        // A filter that can match something outside a scope still waits for it.
        expect((yield* a.wait("Orders", SyncFilter.currentScope().orStream(s).withTimeout(0)))._tag).toBe("TimedOut")
        // Inside a scope that emitted nothing it matches: nothing to wait for.
        expect(yield* ScopedEventTracker.withScope(a.wait("Orders", SyncFilter.currentScope()))).toMatchObject({
          _tag: "NoPendingEvents",
          eventsAwaited: 0
        })
      })
    )
  )

  it.effect("a filter that matches nothing -> NoPendingEvents", () =>
    provided(
      ScopedEventTracker.withScope(
        Effect.gen(function* () {
          yield* emit("Orders", uuid())
          expect((yield* wait(SyncFilter.forStream(uuid()))).eventsAwaited).toBe(0)
          expect((yield* wait(SyncFilter.forEventTypes("Other")))._tag).toBe("NoPendingEvents")
          expect((yield* wait(SyncFilter.currentScope(), "OtherPerspective"))._tag).toBe("NoPendingEvents")
        })
      )
    )
  )

  it.effect("nothing left after filtering (already processed) -> NoPendingEvents", () =>
    provided(
      ScopedEventTracker.withScope(
        Effect.gen(function* () {
          const e = yield* emit("Orders", uuid())
          yield* mark([e])
          expect((yield* wait(SyncFilter.currentScope()))._tag).toBe("NoPendingEvents")
        })
      )
    )
  )

  it.effect("a stream filter waits only for that stream; Synced with elapsed time and count", () =>
    provided(
      ScopedEventTracker.withScope(
        Effect.gen(function* () {
          const [s1, s2] = [uuid(), uuid()]
          const e1 = yield* emit("Orders", s1)
          yield* emit("Orders", s2)
          const fiber = yield* Effect.forkChild(wait(SyncFilter.forStream(s1)))
          yield* waitersRegistered(1)
          yield* TestClock.adjust(300)
          yield* mark([e1])
          const result = yield* Fiber.join(fiber)
          expect(result._tag).toBe("Synced")
          expect(result.eventsAwaited).toBe(1)
          expect(Duration.toMillis(result.elapsed)).toBe(300)
        })
      )
    )
  )

  it.effect("several streams wait for all", () =>
    provided(
      ScopedEventTracker.withScope(
        Effect.gen(function* () {
          const [s1, s2] = [uuid(), uuid()]
          const e1 = yield* emit("Orders", s1)
          const e2 = yield* emit("Orders", s2)
          const fiber = yield* Effect.forkChild(wait(SyncFilter.forStream(s1).orStream(s2)))
          yield* waitersRegistered(1)
          yield* mark([e1])
          expect(isRunning(fiber)).toBe(true)
          yield* mark([e2])
          const result = yield* Fiber.join(fiber)
          expect([result._tag, result.eventsAwaited]).toEqual(["Synced", 2])
        })
      )
    )
  )

  it.effect("currentScope waits for this scope's events only", () =>
    provided(
      Effect.gen(function* () {
        const s = uuid()
        const elsewhere = yield* ScopedEventTracker.withScope(emit("Orders", s))
        yield* ScopedEventTracker.withScope(
          Effect.gen(function* () {
            const mine = yield* emit("Orders", s)
            const fiber = yield* Effect.forkChild(wait(SyncFilter.currentScope()))
            yield* waitersRegistered(1)
            yield* mark([mine])
            expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", eventsAwaited: 1 })
          })
        )
        expect(yield* (yield* Tracker).isPending(elsewhere, "Orders")).toBe(true)
      })
    )
  )

  for (const debuggerAware of [true, false]) {
    it.effect(`times out (TimedOut), debugger-aware ${debuggerAware}`, () =>
      provided(
        ScopedEventTracker.withScope(
          Effect.gen(function* () {
            yield* emit("Orders", uuid())
            const options = SyncFilter.currentScope().withTimeout(1000).withDebuggerAwareTimeout(debuggerAware)
            const fiber = yield* Effect.forkChild(wait(options))
            yield* waitersRegistered(1)
            yield* TestClock.adjust(999)
            expect(isRunning(fiber)).toBe(true)
            yield* TestClock.adjust(1)
            const result = yield* Fiber.join(fiber)
            expect([result._tag, result.eventsAwaited, Duration.toMillis(result.elapsed)]).toEqual(["TimedOut", 1, 1000])
            expect((yield* (yield* Tracker).stats).waiters).toBe(0)
          })
        )
      )
    )
  }

  it.effect("a zero timeout checks once and times out when events are pending", () =>
    provided(
      ScopedEventTracker.withScope(
        Effect.gen(function* () {
          yield* emit("Orders", uuid())
          expect((yield* wait(SyncFilter.currentScope().withTimeout(0)))._tag).toBe("TimedOut")
        })
      )
    )
  )

  it.effect("time frozen in a debugger does not count toward the timeout", () =>
    provided(
      ScopedEventTracker.withScope(
        Effect.gen(function* () {
          const e = yield* emit("Orders", uuid())
          const clock = yield* Clock.Clock
          let frozen = 0
          const now = () => clock.currentTimeMillisUnsafe() + frozen
          const fiber = yield* Effect.forkChild(
            Effect.provideService(wait(SyncFilter.currentScope().withTimeout(1000)), Clock.Clock, {
              ...clock,
              currentTimeMillisUnsafe: now,
              currentTimeMillis: Effect.sync(now)
            })
          )
          yield* waitersRegistered(1)
          yield* TestClock.adjust(500)
          frozen += 30_000 // a breakpoint held for 30 s
          yield* TestClock.adjust(400)
          expect(isRunning(fiber)).toBe(true)
          yield* mark([e])
          expect((yield* Fiber.join(fiber))._tag).toBe("Synced")
        })
      )
    )
  )

  it.effect("cancellation by interruption removes the waiter and leaves the events tracked", () =>
    provided(
      ScopedEventTracker.withScope(
        Effect.gen(function* () {
          const e = yield* emit("Orders", uuid())
          const fiber = yield* Effect.forkChild(wait(SyncFilter.currentScope()))
          yield* waitersRegistered(1)
          yield* Fiber.interrupt(fiber)
          const tracker = yield* Tracker
          expect((yield* tracker.stats).waiters).toBe(0)
          expect(yield* tracker.isPending(e, "Orders")).toBe(true)
        })
      )
    )
  )

  it.effect("inside an inline lifecycle stage it is refused with a typed error; detached stages are fine", () =>
    provided(
      ScopedEventTracker.withScope(
        Effect.gen(function* () {
          const awaiter = yield* Awaiter
          const refused = yield* Effect.flip(InlineLifecycleStage.withInlineStage(wait(SyncFilter.currentScope())))
          expect(refused).toMatchObject({ _tag: "InlineStageSyncError", perspectiveName: "Orders" })
          const refusedStream = yield* Effect.flip(InlineLifecycleStage.withInlineStage(awaiter.waitForStream("Orders", uuid())))
          expect(refusedStream._tag).toBe("InlineStageSyncError")
          const detached = yield* InlineLifecycleStage.withInlineStage(
            InlineLifecycleStage.withDetachedStage(wait(SyncFilter.currentScope()))
          )
          expect(detached._tag).toBe("NoPendingEvents")
        })
      )
    )
  )

  it.effect("an invalid filter fails with SyncFilterError", () =>
    provided(
      Effect.gen(function* () {
        const error = yield* Effect.flip(wait(SyncFilter.forStream("not-a-uuid")))
        expect(error._tag).toBe("SyncFilterError")
      })
    )
  )
})

describe("PerspectiveSyncAwaiter.waitForStream", () => {
  it.effect("with an explicit event id waits for that id only", () =>
    provided(
      Effect.gen(function* () {
        const s = uuid()
        const [e1, e2] = yield* ScopedEventTracker.withScope(Effect.all([emit("Orders", s), emit("Orders", s)]))
        const fiber = yield* Effect.forkChild(Effect.flatMap(Awaiter, (a) => a.waitForStream("Orders", s, { eventId: e2 })))
        yield* waitersRegistered(1)
        yield* mark([e1])
        expect(isRunning(fiber)).toBe(true)
        yield* mark([e2])
        expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", eventsAwaited: 1 })
      })
    )
  )

  it.effect("with event types filters by them", () =>
    provided(
      Effect.gen(function* () {
        const s = uuid()
        const [created] = yield* ScopedEventTracker.withScope(
          Effect.all([emit("Orders", s, "OrderCreated"), emit("Orders", s, "OrderShipped")])
        )
        const fiber = yield* Effect.forkChild(
          Effect.flatMap(Awaiter, (a) => a.waitForStream("Orders", s, { eventTypes: ["OrderCreated"] }))
        )
        yield* waitersRegistered(1)
        yield* mark([created!])
        expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", eventsAwaited: 1 })
      })
    )
  )

  it.effect("cross-scope: waits on the stream's pending events emitted in another scope", () =>
    provided(
      Effect.gen(function* () {
        const s = uuid()
        const ids = yield* ScopedEventTracker.withScope(Effect.all([emit("Orders", s), emit("Orders", s)]))
        yield* ScopedEventTracker.withScope(
          Effect.gen(function* () {
            const awaiter = yield* Awaiter
            expect((yield* awaiter.wait("Orders", SyncFilter.currentScope()))._tag).toBe("NoPendingEvents")
            const fiber = yield* Effect.forkChild(awaiter.waitForStream("Orders", s, { timeout: "2 seconds" }))
            yield* waitersRegistered(1)
            yield* mark(ids)
            expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", eventsAwaited: 2 })
          })
        )
      })
    )
  )

  it.effect("untracked events are not done while the inquiry port reports them pending", () =>
    Effect.gen(function* () {
      const e = uuid()
      const pendingInDatabase = new Set([e])
      const port = Layer.succeed(SyncInquiryPort, {
        pendingEventIds: (_perspective: string, ids: ReadonlyArray<string>) =>
          Effect.succeed({ pendingEventIds: ids.filter((id) => pendingInDatabase.has(id)) })
      })
      const withPort = PerspectiveSyncAwaiter.layerWith({ pollInterval: 100 }).pipe(
        Layer.provide(port),
        Layer.provideMerge(SyncEventTracker.layer)
      )
      yield* Effect.gen(function* () {
        const fiber = yield* Effect.forkChild(Effect.flatMap(Awaiter, (a) => a.waitForStream("Orders", uuid(), { eventId: e })))
        yield* TestClock.adjust(300)
        expect(isRunning(fiber)).toBe(true)
        pendingInDatabase.delete(e) // processed on another instance
        yield* TestClock.adjust(100)
        expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", eventsAwaited: 1 })
      }).pipe(Effect.provide(withPort))
    })
  )

  it.effect("with the default port, an event no one tracks has nothing to wait for", () =>
    provided(
      Effect.gen(function* () {
        const result = yield* Effect.flatMap(Awaiter, (a) => a.waitForStream("Orders", uuid(), { eventId: uuid() }))
        expect(result._tag).toBe("NoPendingEvents")
      })
    )
  )
})

describe("PerspectiveSyncAwaiter.isCaughtUp", () => {
  it.effect("false while matching events are pending, true after", () =>
    provided(
      ScopedEventTracker.withScope(
        Effect.gen(function* () {
          const awaiter = yield* Awaiter
          const s = uuid()
          const e = yield* emit("Orders", s)
          expect(yield* awaiter.isCaughtUp("Orders", SyncFilter.forStream(s))).toBe(false)
          expect(yield* awaiter.isCaughtUp("Orders", SyncFilter.forStream(uuid()))).toBe(true)
          yield* mark([e])
          expect(yield* awaiter.isCaughtUp("Orders", SyncFilter.forStream(s))).toBe(true)
        })
      )
    )
  )
})

describe("EmittedEvents.record", () => {
  it.effect("tracks in the scope and for every registered perspective; awaiters see it end to end", () =>
    Effect.gen(function* () {
      const s = uuid()
      const eventId = uuid()
      yield* ScopedEventTracker.withScope(
        Effect.gen(function* () {
          yield* EmittedEvents.record([
            { eventId, streamId: s, eventType: "OrderCreated" },
            { eventId: uuid(), streamId: s, eventType: "Untracked" }
          ])
          expect(yield* ScopedEventTracker.getEmittedEvents()).toHaveLength(2)
          const tracker = yield* Tracker
          expect((yield* tracker.stats).tracked).toBe(2)
          const orders = yield* Effect.forkChild(wait(SyncFilter.currentScope()))
          const all = yield* Effect.forkChild(
            Effect.flatMap(EventCompletionAwaiter.EventCompletionAwaiter, (a) => a.waitForEvents([eventId]))
          )
          yield* waitersRegistered(2)
          yield* mark([eventId], "Orders")
          expect((yield* Fiber.join(orders))._tag).toBe("Synced")
          expect(isRunning(all)).toBe(true)
          yield* mark([eventId], "Reports")
          expect((yield* Fiber.join(all))._tag).toBe("Synced")
        })
      )
    }).pipe(
      Effect.provide(
        Layer.mergeAll(PerspectiveSyncAwaiter.layer, EventCompletionAwaiter.layer).pipe(
          Layer.provideMerge(SyncEventTracker.layer),
          Layer.provideMerge(TrackedEventTypeRegistry.layer({ OrderCreated: ["Orders", "Reports"] }))
        )
      )
    )
  )
})
