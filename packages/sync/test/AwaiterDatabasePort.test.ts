import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { ChangeSignal } from "../src/internal/processedListener.js"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as SyncEventTracker from "../src/SyncEventTracker.js"
import * as SyncInquiry from "../src/SyncInquiry.js"
import { SyncInquiryPort, type SyncInquiryPortShape } from "../src/SyncInquiryPort.js"
import { isRunning, start, uuid } from "./support.js"

/** A fake database port: what it says pending / dead-lettered, a change signal, and how often it was asked. */
const fakeDatabase = () => {
  const pending = new Set<string>()
  const deadLettered = new Set<string>()
  const signal = new ChangeSignal()
  const stats = { asked: 0 }
  const port: SyncInquiryPortShape = {
    authoritative: true,
    pendingEventIds: (_p, ids) =>
      Effect.sync(() => {
        stats.asked++
        return { pendingEventIds: ids.filter((id) => pending.has(id)), deadLetteredEventIds: ids.filter((id) => deadLettered.has(id)) }
      }),
    pendingForStream: () => Effect.succeed([...pending]),
    changes: { current: signal.current, awaitChangeAfter: (g) => signal.awaitChangeAfter(g) }
  }
  const layer = PerspectiveSyncAwaiter.layer.pipe(Layer.provide(Layer.succeed(SyncInquiryPort, port)), Layer.provideMerge(SyncEventTracker.layer))
  return { pending, deadLettered, signal, stats, layer }
}

const awaiter = Effect.service(PerspectiveSyncAwaiter.PerspectiveSyncAwaiter)
const tracker = Effect.service(SyncEventTracker.SyncEventTracker)

describe("PerspectiveSyncAwaiter with a database port", () => {
  it.effect("a tracked event dead-lettered on any instance ends the wait on the change signal and is named", () => {
    const db = fakeDatabase()
    return Effect.gen(function*() {
      const [e, s] = [uuid(), uuid()]
      yield* (yield* tracker).trackEvent({ eventId: e, streamId: s, eventType: "A", perspectiveName: "p" })
      db.pending.add(e)
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [e]))
      expect(db.stats.asked).toBe(0) // tracked here: the fast path asks nobody
      db.pending.delete(e)
      db.deadLettered.add(e)
      db.signal.bump()
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", eventsAwaited: 1, deadLettered: [e] })
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("a tracked event processed on another instance ends the wait (the local tracker never hears of it)", () => {
    const db = fakeDatabase()
    return Effect.gen(function*() {
      const [e, s] = [uuid(), uuid()]
      yield* (yield* tracker).trackEvent({ eventId: e, streamId: s, eventType: "A", perspectiveName: "p" })
      db.pending.add(e)
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [e]))
      db.signal.bump() // a change, but still pending
      yield* Effect.yieldNow
      expect(isRunning(fiber)).toBe(true)
      db.pending.delete(e)
      db.signal.bump()
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", deadLettered: [] })
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("without signals the 1 s safety-net poll still finds it; a signal sent before a wait is seen through the counter", () => {
    const db = fakeDatabase()
    return Effect.gen(function*() {
      const e = uuid()
      db.pending.add(e)
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [e], { timeout: "10 seconds" }))
      db.pending.delete(e) // processed, but no NOTIFY arrives
      yield* TestClock.adjust(900)
      expect(isRunning(fiber)).toBe(true)
      yield* TestClock.adjust(200)
      expect((yield* Fiber.join(fiber))._tag).toBe("Synced")
      // A signal fired before the wait registers is seen through the counter.
      const generation = yield* db.signal.current
      db.signal.bump()
      yield* db.signal.awaitChangeAfter(generation)
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("cross-scope: waitForStreamAsync discovers the stream's pending events in the database", () => {
    const db = fakeDatabase()
    return Effect.gen(function*() {
      const [a, b] = [uuid(), uuid()]
      db.pending.add(a).add(b)
      const fiber = yield* start((yield* awaiter).waitForStreamAsync("p", uuid()))
      db.pending.clear()
      db.signal.bump()
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", eventsAwaited: 2 })
    }).pipe(Effect.provide(db.layer))
  })
})

describe("SyncInquiry.isSettled", () => {
  it("dead-lettered expected ids settle the wait but are not fully synced", () => {
    const [a, b] = [uuid(), uuid()]
    const result = { inquiryId: uuid(), pendingCount: 0, processedCount: 1, processedEventIds: [a], deadLetteredEventIds: [b], expectedEventIds: [a, b] }
    expect(SyncInquiry.isSettled(result)).toBe(true)
    expect(SyncInquiry.isFullySynced(result)).toBe(false)
    expect(SyncInquiry.isSettled({ ...result, deadLetteredEventIds: [] })).toBe(false)
  })
})
