import { describe, expect, it } from "@effect/vitest"
import { EventDefinition, Perspective, PerspectiveStore } from "@whizbang/core"
import { Effect, Fiber, Layer, Option, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as SyncAwareLens from "../src/SyncAwareLens.js"
import * as SyncEventTracker from "../src/SyncEventTracker.js"
import * as SyncFilter from "../src/SyncFilter.js"
import { start, uuid, waitersRegistered } from "./support.js"

const layer = Layer.mergeAll(
  PerspectiveSyncAwaiter.layer,
  Layer.effect(PerspectiveStore.PerspectiveStore, PerspectiveStore.makeMemory)
).pipe(Layer.provideMerge(SyncEventTracker.layer))

const OrderPlaced = EventDefinition.make("OrderPlaced", { payload: Schema.Struct({ orderId: Schema.String }), streamId: (p) => p.orderId })
const orders = Perspective.make({
  name: "orders",
  events: [OrderPlaced],
  model: Schema.Struct({ total: Schema.Number, region: Schema.optionalKey(Schema.String) }),
  initial: { total: 0 },
  apply: { OrderPlaced: (m) => m }
})

/** Tracks an event of stream `s` for `orders`; "processing" it writes the row and marks it, as the worker would. */
const pendingWrite = (s: string, data: unknown) =>
  Effect.gen(function* () {
    const tracker = yield* SyncEventTracker.SyncEventTracker
    const eventId = uuid()
    yield* ScopedEventTracker.trackEmittedEvent({ eventId, streamId: s, eventType: "OrderPlaced" })
    yield* tracker.trackEvent({ eventId, streamId: s, eventType: "OrderPlaced", perspectiveName: "orders" })
    return Effect.gen(function* () {
      yield* (yield* PerspectiveStore.PerspectiveStore).writeBatch([{ perspectiveName: "orders", streamId: s, data, action: "none" }])
      yield* tracker.markProcessedByPerspective([eventId], "orders")
    })
  })

describe("SyncAwareLens", () => {
  it.effect("getById waits for the stream, then returns the written row with Synced", () =>
    Effect.gen(function* () {
      const s = uuid()
      const process = yield* pendingWrite(s, { total: 5 })
      const fiber = yield* start(SyncAwareLens.getById(orders, s))
      yield* waitersRegistered(1)
      yield* process
      const { row, sync } = yield* Fiber.join(fiber)
      expect(sync._tag).toBe("Synced")
      expect(Option.getOrThrow(row).data).toEqual({ total: 5 })
    }).pipe(Effect.provide(layer))
  )

  it.effect("a timed-out wait is reported with the (stale) row, not ignored", () =>
    Effect.gen(function* () {
      const s = uuid()
      yield* (yield* PerspectiveStore.PerspectiveStore).writeBatch([
        { perspectiveName: "orders", streamId: s, data: { total: 1 }, action: "none" }
      ])
      yield* pendingWrite(s, { total: 2 }) // never processed
      const lens = yield* SyncAwareLens.withSync(orders, { timeout: "1 second" })
      const fiber = yield* start(lens.getById(s))
      yield* TestClock.adjust("2 seconds")
      const { row, sync } = yield* Fiber.join(fiber)
      expect(sync._tag).toBe("TimedOut")
      expect(Option.getOrThrow(row).data).toEqual({ total: 1 })
    }).pipe(Effect.provide(layer))
  )

  it.effect("with a filter: waits for what the filter matches in the current scope", () =>
    ScopedEventTracker.withScope(
      Effect.gen(function* () {
        const s = uuid()
        const process = yield* pendingWrite(s, { total: 9 })
        const fiber = yield* start(SyncAwareLens.getById(orders, s, SyncFilter.currentScope()))
        yield* waitersRegistered(1)
        yield* process
        const result = yield* Fiber.join(fiber)
        expect(result.sync).toMatchObject({ _tag: "Synced", eventsAwaited: 1 })
        expect(Option.getOrThrow(result.row).data).toEqual({ total: 9 })
      })
    ).pipe(Effect.provide(layer))
  )

  it.effect("query delegates to the store without waiting; a missing row is None with NoPendingEvents", () =>
    Effect.gen(function* () {
      const store = yield* PerspectiveStore.PerspectiveStore
      const [a, b] = [uuid(), uuid()]
      yield* store.writeBatch([
        { perspectiveName: "orders", streamId: a, data: { total: 1, region: "eu" }, action: "none" },
        { perspectiveName: "orders", streamId: b, data: { total: 2, region: "us" }, action: "none" }
      ])
      yield* pendingWrite(a, {}) // pending, but query does not wait
      const lens = yield* SyncAwareLens.withSync(orders)
      expect((yield* lens.query({ where: { region: "us" } })).map((r) => r.id)).toEqual([b])
      const missing = yield* lens.getById(uuid())
      expect(Option.isNone(missing.row)).toBe(true)
      expect(missing.sync._tag).toBe("NoPendingEvents")
    }).pipe(Effect.provide(layer))
  )

  it.effect("the row's model is decoded with the perspective's schema; one that does not decode is a store error", () =>
    Effect.gen(function* () {
      const s = uuid()
      yield* (yield* PerspectiveStore.PerspectiveStore).writeBatch([
        { perspectiveName: "orders", streamId: s, data: { total: "five" }, action: "none" }
      ])
      const error = yield* Effect.flip(SyncAwareLens.getById(orders, s))
      expect(error._tag).toBe("PerspectiveStoreError")
      expect(error.message).toContain(`perspective "orders"`)
    }).pipe(Effect.provide(layer))
  )
})
