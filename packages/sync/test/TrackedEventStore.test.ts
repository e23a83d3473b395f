import { describe, expect, it } from "@effect/vitest"
import { EventStore } from "@whizbang/core"
import { Effect, Layer } from "effect"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as SyncEventTracker from "../src/SyncEventTracker.js"
import * as TrackedEventStore from "../src/TrackedEventStore.js"
import * as TrackedEventTypeRegistry from "../src/TrackedEventTypeRegistry.js"
import * as WorkerSignals from "../src/WorkerSignals.js"
import * as Orders from "./fixtures/orders.js"
import { uuid } from "./support.js"

const layer = TrackedEventStore.layer.pipe(
  Layer.provide(EventStore.layerMemory(Orders.events)),
  Layer.provideMerge(TrackedEventTypeRegistry.layerFromPerspectives(Orders.perspectives)),
  Layer.provideMerge(SyncEventTracker.layer)
)

describe("TrackedEventStore", () => {
  it.effect("records appended events in the scope and, per handling perspective, in the tracker", () =>
    ScopedEventTracker.withScope(
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const tracker = yield* SyncEventTracker.SyncEventTracker
        const s = uuid()
        const result = yield* store.append(s, [Orders.placed(s, 3), Orders.noted(s)])
        const [placed, noted] = result.events.map((e) => e.eventId)
        expect((yield* ScopedEventTracker.getEmittedEvents()).map((e) => e.eventId)).toEqual([placed, noted])
        expect(yield* tracker.isPending(placed!, "order_summary")).toBe(true)
        expect(yield* tracker.isPending(noted!)).toBe(false) // no perspective handles Noted
        expect((yield* store.readStream(s)).length).toBe(2)
      })
    ).pipe(Effect.provide(layer))
  )

  it.effect("a failed append records nothing", () =>
    ScopedEventTracker.withScope(
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const s = uuid()
        yield* Effect.flip(store.append(s, [Orders.placed(uuid(), 1)])) // wrong stream
        expect(yield* ScopedEventTracker.getEmittedEvents()).toEqual([])
        expect((yield* (yield* SyncEventTracker.SyncEventTracker).stats).tracked).toBe(0)
      })
    ).pipe(Effect.provide(layer))
  )
})

describe("WorkerSignals", () => {
  it.effect("onPerspectiveEventProcessed marks the group processed for its perspective, after the caller's hook", () =>
    Effect.gen(function* () {
      const tracker = yield* SyncEventTracker.SyncEventTracker
      const [e, s] = [uuid(), uuid()]
      yield* tracker.trackEvent({ eventId: e, streamId: s, eventType: "OrderPlaced", perspectiveName: "order_summary" })
      yield* tracker.trackEvent({ eventId: e, streamId: s, eventType: "OrderPlaced", perspectiveName: "other" })
      const seen: Array<boolean> = []
      const hooks = yield* WorkerSignals.hooks({
        onPerspectiveEventProcessed: () => Effect.map(tracker.isPending(e, "order_summary"), (p) => void seen.push(p))
      })
      yield* hooks.onPerspectiveEventProcessed!({ streamId: s, perspectiveName: "order_summary", eventIds: [e], envelopes: [], firing: [] })
      expect(seen).toEqual([true])
      expect(yield* tracker.isPending(e, "order_summary")).toBe(false)
      expect(yield* tracker.isPending(e, "other")).toBe(true)
    }).pipe(Effect.provide(SyncEventTracker.layer))
  )
})
