import { describe, expect, it } from "@effect/vitest"
import { type Envelope, Receptor } from "@whizbang/core"
import { Duration, Effect, Exit, Fiber, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import * as Dispatcher from "../src/Dispatcher.js"
import * as EmittedEvents from "../src/EmittedEvents.js"
import * as EventCompletionAwaiter from "../src/EventCompletionAwaiter.js"
import * as InlineLifecycleStage from "../src/InlineLifecycleStage.js"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as ReceptorSync from "../src/ReceptorSync.js"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as SyncContext from "../src/SyncContext.js"
import * as SyncEventTracker from "../src/SyncEventTracker.js"
import { SyncInquiryPort, type SyncInquiryPortShape } from "../src/SyncInquiryPort.js"
import type * as SyncResult from "../src/SyncResult.js"
import * as TrackedEventTypeRegistry from "../src/TrackedEventTypeRegistry.js"
import { isRunning, start, uuid, waitersRegistered } from "./support.js"

const envelope = (eventType: string, streamId = uuid(), eventId = uuid()): Envelope.Envelope => ({
  eventId,
  streamId,
  streamVersion: 1,
  eventType,
  payload: {},
  metadata: { correlationId: eventId, causationId: null, timestamp: new Date(0).toISOString() },
  scope: {}
})

/** A dispatcher over receptors built from `defs`; `seen` collects what each handler observed. */
const setup = (defs: ReadonlyArray<Parameters<typeof Receptor.make>[0]>, defaultSyncTimeout?: Duration.Input) => {
  const receptors = defs.map((d) => Receptor.make(d))
  return Dispatcher.layer({ receptors, defaultSyncTimeout }).pipe(
    Layer.provideMerge(Layer.mergeAll(PerspectiveSyncAwaiter.layer, EventCompletionAwaiter.layer)),
    Layer.provideMerge(SyncEventTracker.layer),
    Layer.provideMerge(TrackedEventTypeRegistry.layer({ OrderPlaced: ["orders"], OrderShipped: ["orders", "audit"] }))
  )
}

const track = (e: Envelope.Envelope, perspectiveName = "orders") =>
  Effect.flatMap(SyncEventTracker.SyncEventTracker, (t) => t.trackEvent({ ...e, perspectiveName }))
const mark = (ids: ReadonlyArray<string>, perspectiveName = "orders") =>
  Effect.flatMap(SyncEventTracker.SyncEventTracker, (t) => t.markProcessedByPerspective(ids, perspectiveName))
const dispatcher = Effect.service(Dispatcher.Dispatcher)

describe("ReceptorSync option rules", () => {
  it("an absent timeout means the global default; explicit values win, zero included", () => {
    const ms = (d: Duration.Duration) => Duration.toMillis(d)
    expect(ms(ReceptorSync.effectiveTimeout({ perspective: "p" }))).toBe(5000)
    expect(ms(ReceptorSync.effectiveTimeout({ perspective: "p" }, "1234 millis"))).toBe(1234)
    expect(ms(ReceptorSync.effectiveTimeout({ perspective: "p", timeout: 0 }, 1234))).toBe(0)
    expect(ms(ReceptorSync.effectiveTimeout({ perspective: "p", timeout: "250 millis" }, 1234))).toBe(250)
  })

  it("fire behaviour defaults to FireOnSuccess; event types default to all (the incoming event is awaited)", () => {
    expect(ReceptorSync.fireBehavior({ perspective: "p" })).toBe("FireOnSuccess")
    expect(ReceptorSync.fireBehavior({ perspective: "p", fireBehavior: "FireAlways" })).toBe("FireAlways")
    expect(ReceptorSync.awaitsIncomingEvent({ perspective: "p" }, "A")).toBe(true)
    expect(ReceptorSync.awaitsIncomingEvent({ perspective: "p", eventTypes: ["A"] }, "A")).toBe(true)
    expect(ReceptorSync.awaitsIncomingEvent({ perspective: "p", eventTypes: ["B"] }, "A")).toBe(false)
  })
})

describe("Dispatcher", () => {
  it.effect("localInvoke returns the handler's result; unknown and ambiguous types are typed errors", () => {
    const layer = setup([
      { name: "price", handles: ["Quote"], handle: () => Effect.succeed(42) },
      { name: "a", handles: ["Twice"], handle: () => Effect.void },
      { name: "b", handles: ["Twice"], handle: () => Effect.void }
    ])
    return Effect.gen(function* () {
      const d = yield* dispatcher
      expect(yield* d.localInvoke<number>(yield* Dispatcher.command("Quote", {}))).toBe(42)
      const none = yield* Effect.flip(d.localInvoke(yield* Dispatcher.command("Nope", {})))
      expect(none).toMatchObject({ _tag: "DispatchError", reason: { _tag: "NoReceptor", messageType: "Nope" } })
      const two = yield* Effect.flip(d.localInvoke(Dispatcher.event(envelope("Twice"))))
      expect(two).toMatchObject({ reason: { _tag: "AmbiguousReceptor", receptors: ["a", "b"] } })
    }).pipe(Effect.provide(layer))
  })

  it.effect("send runs every receptor of the type, in order; a failing handler is a ReceptorFailed", () => {
    const order: Array<string> = []
    const layer = setup([
      { name: "first", handles: ["Ping"], handle: () => Effect.sync(() => order.push("first")) },
      { name: "second", handles: ["Ping"], handle: () => Effect.sync(() => order.push("second")) },
      { name: "bad", handles: ["Boom"], handle: () => Effect.fail("nope") }
    ])
    return Effect.gen(function* () {
      const d = yield* dispatcher
      yield* d.send(Dispatcher.event(envelope("Ping")))
      expect(order).toEqual(["first", "second"])
      expect(yield* Effect.flip(d.send(Dispatcher.event(envelope("Boom"))))).toMatchObject({
        _tag: "ReceptorFailed",
        receptor: "bad",
        cause: "nope"
      })
    }).pipe(Effect.provide(layer))
  })

  it.effect("commands skip sync even when the receptor declares it", () => {
    let context: Option.Option<SyncContext.SyncContext> | undefined
    const layer = setup([
      {
        name: "ship",
        handles: ["OrderPlaced"],
        awaitPerspectiveSync: [{ perspective: "orders", timeout: "1 minute" }],
        handle: () =>
          Effect.map(SyncContext.Current, (c) => {
            context = c
          })
      }
    ])
    return Effect.gen(function* () {
      const s = uuid()
      yield* track(envelope("OrderPlaced", s)) // pending forever
      yield* (yield* dispatcher).localInvoke(yield* Dispatcher.command("OrderPlaced", {}, { streamId: s }))
      expect(context).toEqual(Option.none())
    }).pipe(Effect.provide(layer))
  })

  it.effect("an event waits for its perspective, then the handler sees Synced", () => {
    let context: Option.Option<SyncContext.SyncContext> = Option.none()
    const layer = setup([
      {
        name: "notify",
        handles: ["OrderPlaced"],
        awaitPerspectiveSync: [{ perspective: "orders" }],
        handle: () =>
          Effect.map(SyncContext.Current, (c) => {
            context = c
          })
      }
    ])
    return Effect.gen(function* () {
      const e = envelope("OrderPlaced")
      yield* track(e)
      const fiber = yield* start((yield* dispatcher).localInvoke(Dispatcher.event(e)))
      yield* waitersRegistered(1)
      expect(Option.isNone(context)).toBe(true)
      yield* mark([e.eventId])
      yield* Fiber.join(fiber)
      expect(Option.getOrThrow(context)).toMatchObject({
        outcome: "Synced",
        perspectiveName: "orders",
        streamId: e.streamId,
        eventsAwaited: 1
      })
    }).pipe(Effect.provide(layer))
  })

  it.effect(
    "FireOnSuccess: a timeout fails with PerspectiveSyncTimeoutError and the handler does not run; -1 uses the configured default",
    () => {
      let ran = false
      const layer = setup(
        [
          {
            name: "strict",
            handles: ["OrderPlaced"],
            awaitPerspectiveSync: [{ perspective: "orders" }],
            handle: () =>
              Effect.sync(() => {
                ran = true
              })
          }
        ],
        "2 seconds"
      )
      return Effect.gen(function* () {
        const e = envelope("OrderPlaced")
        yield* track(e)
        const fiber = yield* start(Effect.exit((yield* dispatcher).localInvoke(Dispatcher.event(e))))
        yield* TestClock.adjust(1900)
        expect(isRunning(fiber)).toBe(true)
        yield* TestClock.adjust(200)
        const exit = yield* Fiber.join(fiber)
        expect(Exit.isFailure(exit)).toBe(true)
        const error = yield* Effect.flip(Effect.flatten(Effect.succeed(exit)))
        expect(error).toMatchObject({
          _tag: "PerspectiveSyncTimeoutError",
          receptor: "strict",
          perspectiveName: "orders",
          timeout: Duration.seconds(2),
          eventsAwaited: 1
        })
        expect(ran).toBe(false)
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect("FireAlways: the handler runs after the timeout and SyncContext says TimedOut; an explicit 0 wins over the default", () => {
    let context: Option.Option<SyncContext.SyncContext> = Option.none()
    const layer = setup(
      [
        {
          name: "lenient",
          handles: ["OrderPlaced"],
          awaitPerspectiveSync: [{ perspective: "orders", timeout: 0, fireBehavior: "FireAlways" }],
          handle: () =>
            Effect.map(SyncContext.Current, (c) => {
              context = c
            })
        }
      ],
      60_000
    )
    return Effect.gen(function* () {
      const e = envelope("OrderPlaced")
      yield* track(e)
      const fiber = yield* start((yield* dispatcher).localInvoke(Dispatcher.event(e)))
      yield* TestClock.adjust(1)
      yield* Fiber.join(fiber)
      const c = Option.getOrThrow(context)
      expect(c.outcome).toBe("TimedOut")
      expect(SyncContext.isTimedOut(c)).toBe(true)
      expect(c.failureReason).toContain("orders")
    }).pipe(Effect.provide(layer))
  })

  it.effect("listed event types: waits for the stream's pending events of those types, not the incoming one", () => {
    let context: Option.Option<SyncContext.SyncContext> = Option.none()
    const layer = setup([
      {
        name: "afterPlaced",
        handles: ["OrderShipped"],
        awaitPerspectiveSync: [{ perspective: "orders", eventTypes: ["OrderPlaced"] }],
        handle: () =>
          Effect.map(SyncContext.Current, (c) => {
            context = c
          })
      }
    ])
    return Effect.gen(function* () {
      const s = uuid()
      const placed = envelope("OrderPlaced", s)
      const incoming = envelope("OrderShipped", s)
      yield* track(placed)
      yield* track(incoming) // not awaited: its type is not listed
      const fiber = yield* start((yield* dispatcher).localInvoke(Dispatcher.event(incoming)))
      yield* waitersRegistered(1)
      yield* mark([placed.eventId])
      yield* Fiber.join(fiber)
      expect(Option.getOrThrow(context)).toMatchObject({ outcome: "Synced", eventsAwaited: 1 })
    }).pipe(Effect.provide(layer))
  })

  it.effect("waitForPerspectives waits until every perspective processed what the handler appended", () => {
    const s = uuid()
    const appended = envelope("OrderShipped", s)
    // The handler "appends": it records in the scope; the append's tracker entries are made up front.
    const layer = setup([
      { name: "ship", handles: ["Ship"], handle: () => Effect.as(ScopedEventTracker.trackEmittedEvent(appended), "ok") }
    ])
    return Effect.gen(function* () {
      yield* EmittedEvents.record([appended]) // outside any scope: tracker only
      const fiber = yield* start((yield* dispatcher).localInvoke(yield* Dispatcher.command("Ship", {}), { waitForPerspectives: true }))
      yield* waitersRegistered(1)
      yield* mark([appended.eventId], "orders")
      expect(isRunning(fiber)).toBe(true) // "audit" still has it
      yield* mark([appended.eventId], "audit")
      expect(yield* Fiber.join(fiber)).toBe("ok")
      yield* EmittedEvents.record([appended]) // tracked again, never processed
      const timedOut = yield* start(
        Effect.flip((yield* dispatcher).localInvoke(yield* Dispatcher.command("Ship", {}), { waitForPerspectives: true, timeout: 100 }))
      )
      yield* TestClock.adjust(200)
      expect(yield* Fiber.join(timedOut)).toMatchObject({
        _tag: "PerspectiveSyncTimeoutError",
        perspectiveName: undefined,
        eventsAwaited: 1
      })
    }).pipe(Effect.provide(layer))
  })

  it.effect("a sync wait inside an inline lifecycle stage is refused", () => {
    const layer = setup([
      { name: "n", handles: ["OrderPlaced"], awaitPerspectiveSync: [{ perspective: "orders" }], handle: () => Effect.void }
    ])
    return Effect.gen(function* () {
      const refused = yield* Effect.flip(
        InlineLifecycleStage.withInlineStage((yield* dispatcher).localInvoke(Dispatcher.event(envelope("OrderPlaced"))))
      )
      expect(refused).toMatchObject({ _tag: "InlineStageSyncError", perspectiveName: "orders" })
    }).pipe(Effect.provide(layer))
  })
})

describe("Dispatcher with a perspective failing at the awaited event (retry backoff)", () => {
  const failure: SyncResult.FailingEvent = {
    eventId: uuid(),
    streamId: uuid(),
    perspectiveName: "orders",
    error: "boom",
    attempts: 1,
    nextAttemptAt: undefined
  }
  /** The database port: every event asked about is pending, held by `failure`. */
  const failingPort: SyncInquiryPortShape = {
    authoritative: true,
    perspectives: new Map([["orders", new Set(["OrderPlaced", "OrderShipped"])]]),
    pendingEventIds: (_p, ids) => Effect.succeed({ pendingEventIds: ids, failing: ids.map((eventId) => ({ eventId, failing: failure })) })
  }
  const failingSetup = (defs: ReadonlyArray<Parameters<typeof Receptor.make>[0]>) =>
    Dispatcher.layer({ receptors: defs.map((d) => Receptor.make(d)) }).pipe(
      Layer.provideMerge(Layer.mergeAll(PerspectiveSyncAwaiter.layer, EventCompletionAwaiter.layer)),
      Layer.provideMerge(SyncEventTracker.layer),
      Layer.provideMerge(Layer.succeed(SyncInquiryPort, failingPort))
    )

  it.effect("FireOnSuccess fails with PerspectiveSyncFailingError at once (the handler does not run, like a dead letter)", () => {
    let ran = false
    const layer = failingSetup([
      {
        name: "strict",
        handles: ["OrderPlaced"],
        awaitPerspectiveSync: [{ perspective: "orders" }],
        handle: () =>
          Effect.sync(() => {
            ran = true
          })
      }
    ])
    return Effect.gen(function* () {
      const e = envelope("OrderPlaced")
      const fiber = yield* start(Effect.flip((yield* dispatcher).localInvoke(Dispatcher.event(e))))
      expect(isRunning(fiber)).toBe(false) // no clock advanced: not the 5 s timeout
      const error = yield* Fiber.join(fiber)
      expect(error).toMatchObject({
        _tag: "PerspectiveSyncFailingError",
        receptor: "strict",
        perspectiveName: "orders",
        failing: [failure]
      })
      expect(error.message).toContain(`perspective "orders" is failing (event ${failure.eventId} of stream ${failure.streamId}`)
      expect(ran).toBe(false)
    }).pipe(Effect.provide(layer))
  })

  it.effect("FireAlways runs the handler with SyncContext Failing; waitForPerspectives fails with PerspectiveSyncFailingError", () => {
    let context: Option.Option<SyncContext.SyncContext> = Option.none()
    const appended = envelope("OrderShipped")
    const layer = failingSetup([
      {
        name: "lenient",
        handles: ["OrderPlaced"],
        awaitPerspectiveSync: [{ perspective: "orders", fireBehavior: "FireAlways" }],
        handle: () =>
          Effect.map(SyncContext.Current, (c) => {
            context = c
          })
      },
      { name: "ship", handles: ["Ship"], handle: () => Effect.as(ScopedEventTracker.trackEmittedEvent(appended), "ok") }
    ])
    return Effect.gen(function* () {
      yield* (yield* dispatcher).localInvoke(Dispatcher.event(envelope("OrderPlaced")))
      expect(Option.getOrThrow(context)).toMatchObject({ outcome: "Failing", failing: [failure] })
      const error = yield* Effect.flip(
        (yield* dispatcher).localInvoke(yield* Dispatcher.command("Ship", {}), { waitForPerspectives: true, timeout: "10 seconds" })
      )
      expect(error).toMatchObject({
        _tag: "PerspectiveSyncFailingError",
        receptor: "ship",
        perspectiveName: undefined,
        pending: [appended.eventId]
      })
    }).pipe(Effect.provide(layer))
  })
})
