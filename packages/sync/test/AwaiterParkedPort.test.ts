import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { ParkedWaits } from "../src/internal/parkedWaits.js"
import { ChangeSignal } from "../src/internal/processedListener.js"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as SyncEventTracker from "../src/SyncEventTracker.js"
import { SyncInquiryPort, type SyncInquiryPortShape } from "../src/SyncInquiryPort.js"
import { isRunning, start, uuid } from "./support.js"

// The awaiter against a port that parks waits (as PgSyncInquiry's does): woken only by a notification that names
// its event (or a sweep), never re-checking the database on other notifications. No clock is advanced, so the
// 1 s safety-net poll never fires.

/** A fake database port with parked waits: `pending` answers the checks, `notify` plays a completion's NOTIFY. */
const parkedPort = Effect.gen(function* () {
  const pending = new Set<string>()
  const stats = { asked: 0, hang: false }
  const signal = new ChangeSignal()
  const classify = (_p: string, ids: ReadonlyArray<string>) =>
    Effect.sync(() => ({ pending: ids.filter((id) => pending.has(id)), deadLettered: [] as ReadonlyArray<string> }))
  const parked = new ParkedWaits(signal, classify)
  yield* parked.start(yield* Effect.scope)
  const port: SyncInquiryPortShape = {
    authoritative: true,
    perspectives: new Map([
      ["p", new Set(["A"])],
      ["q", new Set(["A"])]
    ]),
    pendingEventIds: (perspectiveName, ids) =>
      Effect.suspend(() => {
        stats.asked++
        if (stats.hang) return Effect.never
        return Effect.map(classify(perspectiveName, ids), (c) => ({ pendingEventIds: c.pending, deadLetteredEventIds: c.deadLettered }))
      }),
    changes: { current: signal.current, awaitChangeAfter: (g) => signal.awaitChangeAfter(g) },
    awaitSettled: (perspectiveName, ids, generation) => parked.park(perspectiveName, ids, generation)
  }
  const notify = (perspectiveName: string, ids: ReadonlyArray<string>) => {
    for (const id of ids) pending.delete(id)
    signal.bump()
    parked.notice(new Map([[perspectiveName, new Set(ids)]]))
  }
  const layer = PerspectiveSyncAwaiter.layer.pipe(
    Layer.provide(Layer.succeed(SyncInquiryPort, port)),
    Layer.provideMerge(SyncEventTracker.layer)
  )
  return { pending, stats, notify, parked, layer }
})

const awaiter = Effect.service(PerspectiveSyncAwaiter.PerspectiveSyncAwaiter)

/** Yields (never sleeps) until one wait is parked; fails the test if that never happens. */
const untilParked = (parked: ParkedWaits) =>
  Effect.gen(function* () {
    for (let i = 0; i < 100 && parked.size < 1; i++) yield* Effect.yieldNow
    expect(parked.size).toBe(1)
  })

describe("PerspectiveSyncAwaiter with a port that parks waits", () => {
  it.effect("a parked wait is not woken by notifications naming other events or perspectives; its own ends it, with no further query", () =>
    Effect.gen(function* () {
      const db = yield* parkedPort
      yield* Effect.gen(function* () {
        const [e, other] = [uuid(), uuid()]
        db.pending.add(e)
        db.pending.add(other)
        const fiber = yield* start((yield* awaiter).waitForEvents("p", [e], { timeout: "10 seconds" }))
        yield* untilParked(db.parked)
        expect(db.stats.asked).toBe(1)
        db.notify("p", [other])
        db.notify("q", [e])
        yield* Effect.yieldNow
        expect(isRunning(fiber)).toBe(true)
        db.notify("p", [e])
        expect((yield* Fiber.join(fiber))._tag).toBe("Synced")
        expect(db.stats.asked).toBe(1)
      }).pipe(Effect.provide(db.layer))
    }).pipe(Effect.scoped)
  )

  it.effect(
    "a tracked event applied by another instance while the first database check is still queued: its notification ends the wait",
    () =>
      Effect.gen(function* () {
        const db = yield* parkedPort
        yield* Effect.gen(function* () {
          const [e, s] = [uuid(), uuid()]
          db.pending.add(e)
          db.stats.hang = true // the first check's query does not come back
          yield* (yield* Effect.service(SyncEventTracker.SyncEventTracker)).trackEvent({
            eventId: e,
            streamId: s,
            eventType: "A",
            perspectiveName: "p"
          })
          const fiber = yield* start((yield* awaiter).waitForEvents("p", [e], { timeout: "10 seconds" }))
          yield* untilParked(db.parked)
          expect(isRunning(fiber)).toBe(true)
          // Never marked in this process's tracker: only the notification can end it.
          db.notify("p", [e])
          const result = yield* Fiber.join(fiber)
          expect(result._tag).toBe("Synced")
          expect(result.pending).toEqual([])
        }).pipe(Effect.provide(db.layer))
      }).pipe(Effect.scoped)
  )
})
