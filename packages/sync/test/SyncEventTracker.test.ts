import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as SyncEventTracker from "../src/SyncEventTracker.js"
import { isRunning, start, uuid } from "./support.js"

const { SyncEventTracker: Tracker } = SyncEventTracker
const withTracker = Effect.provide(SyncEventTracker.layer)
const track = (eventId: string, perspectiveName: string, streamId = uuid(), eventType = "OrderCreated") =>
  Effect.flatMap(Tracker, (t) => t.trackEvent({ eventId, perspectiveName, streamId, eventType }))
const stats = Effect.flatMap(Tracker, (t) => t.stats)

describe("SyncEventTracker", () => {
  describe("tracking and pending queries", () => {
    it.effect("one entry per (event, perspective); streams and perspectives are separate", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const [s1, s2, e1, e2] = [uuid(), uuid(), uuid(), uuid()]
          yield* track(e1, "Orders", s1)
          yield* track(e1, "Reports", s1)
          yield* track(e1, "Orders", s1) // duplicate: counts once
          yield* track(e2, "Orders", s2)
          expect((yield* stats).tracked).toBe(3)
          expect((yield* tracker.getPendingEvents(s1, "Orders")).map((e) => e.eventId)).toEqual([e1])
          expect((yield* tracker.getPendingEvents(s1, "Reports")).map((e) => e.eventId)).toEqual([e1])
          expect((yield* tracker.getPendingEvents(s2, "Orders")).map((e) => e.eventId)).toEqual([e2])
          expect(yield* tracker.getPendingEvents(s2, "Reports")).toEqual([])
          expect(yield* tracker.getAllTrackedEventIds).toEqual([e1, e2])
        })
      )
    )

    it.effect("pending queries filter by event types; no or empty types = all of the stream", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const s = uuid()
          const [a, b, c] = [uuid(), uuid(), uuid()]
          yield* track(a, "P", s, "A")
          yield* track(b, "P", s, "B")
          yield* track(c, "P", s, "C")
          const ids = (types?: Array<string>) => Effect.map(tracker.getPendingEvents(s, "P", types), (es) => es.map((e) => e.eventId))
          expect(yield* ids(["A", "C"])).toEqual([a, c])
          expect(yield* ids()).toEqual([a, b, c])
          expect(yield* ids([])).toEqual([a, b, c])
        })
      )
    )
  })

  describe("marking", () => {
    it.effect("markProcessed removes the event for every perspective", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const e = uuid()
          yield* track(e, "A")
          yield* track(e, "B")
          yield* tracker.markProcessed([e])
          expect((yield* stats).tracked).toBe(0)
          expect(yield* tracker.isPending(e)).toBe(false)
        })
      )
    )

    it.effect("markProcessedByPerspective removes only that perspective (three tracked, mark one, two remain)", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const e = uuid()
          for (const p of ["A", "B", "C"]) yield* track(e, p)
          yield* tracker.markProcessedByPerspective([e], "B")
          expect((yield* stats).tracked).toBe(2)
          expect([yield* tracker.isPending(e, "A"), yield* tracker.isPending(e, "B"), yield* tracker.isPending(e, "C")]).toEqual([
            true,
            false,
            true
          ])
        })
      )
    )

    it.effect("unknown ids or perspectives are no-ops", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const e = uuid()
          yield* track(e, "A")
          yield* tracker.markProcessed([uuid()])
          yield* tracker.markProcessedByPerspective([e], "Unknown")
          yield* tracker.markProcessedByPerspective([uuid()], "A")
          yield* tracker.markPerspectiveStreamProcessed("A", uuid())
          expect((yield* stats).tracked).toBe(1)
        })
      )
    )

    it.effect("a mark that arrives before its track (a worker elsewhere committed first) drops that track only", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const [early, other] = [uuid(), uuid()]
          yield* tracker.markProcessedByPerspective([early], "A")
          yield* track(early, "A")
          yield* track(early, "B")
          yield* track(other, "A")
          expect(yield* tracker.isPending(early, "A")).toBe(false)
          expect(yield* tracker.isPending(early, "B")).toBe(true)
          expect(yield* tracker.isPending(other, "A")).toBe(true)
          expect((yield* stats).tracked).toBe(2)
        })
      )
    )

    it.effect("early marks are remembered up to 65,536, the oldest forgotten first", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const ids = Array.from({ length: 65_537 }, () => uuid())
          yield* tracker.markProcessedByPerspective(ids.slice(0, 65_536), "A")
          // Marked again: it keeps its place, it does not become the newest.
          yield* tracker.markProcessedByPerspective([ids[0]!], "A")
          yield* tracker.markProcessedByPerspective([ids[65_536]!], "A")
          yield* track(ids[0]!, "A")
          yield* track(ids[1]!, "A")
          yield* track(ids[65_536]!, "A")
          expect(yield* tracker.isPending(ids[0]!, "A")).toBe(true)
          expect(yield* tracker.isPending(ids[1]!, "A")).toBe(false)
          expect(yield* tracker.isPending(ids[65_536]!, "A")).toBe(false)
          expect((yield* stats).tracked).toBe(1)
        })
      )
    )

    it.effect("markPerspectiveStreamProcessed clears that (perspective, stream), wakes its waiters, touches nothing else", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const [s, other] = [uuid(), uuid()]
          const [e1, e2, e3] = [uuid(), uuid(), uuid()]
          yield* track(e1, "P", s)
          yield* track(e2, "P", s)
          yield* track(e1, "Q", s)
          yield* track(e3, "P", other)
          const waiter = yield* start(tracker.waitForPerspectiveEvents([e1, e2], "P", { timeout: "10 seconds" }))
          yield* tracker.markPerspectiveStreamProcessed("P", s)
          expect(yield* Fiber.join(waiter)).toBe(true)
          expect(yield* tracker.getPendingEvents(s, "P")).toEqual([])
          expect((yield* tracker.getPendingEvents(s, "Q")).map((e) => e.eventId)).toEqual([e1])
          expect((yield* tracker.getPendingEvents(other, "P")).map((e) => e.eventId)).toEqual([e3])
        })
      )
    )
  })

  describe("waits", () => {
    const waits = (tracker: SyncEventTracker.SyncEventTrackerShape, perspective: string) => ({
      waitForEvents: (ids: ReadonlyArray<string> | undefined, o?: SyncEventTracker.WaitOptions) => tracker.waitForEvents(ids, o),
      waitForPerspectiveEvents: (ids: ReadonlyArray<string> | undefined, o?: SyncEventTracker.WaitOptions) =>
        tracker.waitForPerspectiveEvents(ids, perspective, o),
      waitForAllPerspectives: (ids: ReadonlyArray<string> | undefined, o?: SyncEventTracker.WaitOptions) =>
        tracker.waitForAllPerspectives(ids, o)
    })
    const kinds = ["waitForEvents", "waitForPerspectiveEvents", "waitForAllPerspectives"] as const

    for (const kind of kinds) {
      describe(kind, () => {
        it.effect("empty or absent ids return true at once", () =>
          withTracker(
            Effect.gen(function* () {
              const wait = waits(yield* Tracker, "P")[kind]
              const fibers = [yield* start(wait([])), yield* start(wait(undefined))]
              expect(fibers.map(isRunning)).toEqual([false, false])
              expect(yield* Fiber.joinAll(fibers)).toEqual([true, true])
            })
          )
        )

        it.effect("untracked or already processed ids return true at once", () =>
          withTracker(
            Effect.gen(function* () {
              const tracker = yield* Tracker
              const e = uuid()
              yield* track(e, "P")
              yield* tracker.markProcessed([e])
              const fiber = yield* start(waits(tracker, "P")[kind]([e, uuid()]))
              expect(isRunning(fiber)).toBe(false)
              expect(yield* Fiber.join(fiber)).toBe(true)
            })
          )
        )

        it.effect("processing during the wait signals it", () =>
          withTracker(
            Effect.gen(function* () {
              const tracker = yield* Tracker
              const [e1, e2] = [uuid(), uuid()]
              yield* track(e1, "P")
              yield* track(e2, "P")
              const fiber = yield* start(waits(tracker, "P")[kind]([e1, e2], { timeout: "5 seconds" }))
              yield* tracker.markProcessedByPerspective([e1], "P")
              expect(isRunning(fiber)).toBe(true)
              yield* tracker.markProcessedByPerspective([e2], "P")
              expect(yield* Fiber.join(fiber)).toBe(true)
              expect((yield* stats).waiters).toBe(0)
            })
          )
        )

        it.effect("never processed: false exactly at the timeout", () =>
          withTracker(
            Effect.gen(function* () {
              const tracker = yield* Tracker
              const e = uuid()
              yield* track(e, "P")
              const fiber = yield* start(waits(tracker, "P")[kind]([e], { timeout: "1 second" }))
              yield* TestClock.adjust(999)
              expect(isRunning(fiber)).toBe(true)
              yield* TestClock.adjust(1)
              expect(yield* Fiber.join(fiber)).toBe(false)
              expect((yield* stats).waiters).toBe(0)
            })
          )
        )

        it.effect("cancellation: unregistering the awaiter returns false; interruption removes the waiter", () =>
          withTracker(
            Effect.gen(function* () {
              const tracker = yield* Tracker
              const e = uuid()
              yield* track(e, "P")
              const cancelled = yield* start(waits(tracker, "P")[kind]([e], { awaiterId: "a1", timeout: "1 minute" }))
              expect(yield* tracker.unregisterAwaiter("a1")).toBe(1)
              expect(yield* Fiber.join(cancelled)).toBe(false)
              const interrupted = yield* start(waits(tracker, "P")[kind]([e], { timeout: "1 minute" }))
              expect((yield* stats).waiters).toBe(1)
              yield* Fiber.interrupt(interrupted)
              expect((yield* stats).waiters).toBe(0)
            })
          )
        )
      })
    }

    it.effect("a mark landing right after the check still signals (no lost wake-up)", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          // For every yield count, the mark runs at a different point of the waiter's start-up.
          for (let yields = 0; yields < 8; yields++) {
            const e = uuid()
            yield* track(e, "P")
            const mark = Effect.andThen(Effect.repeat(Effect.yieldNow, { times: yields }), tracker.markProcessedByPerspective([e], "P"))
            const fiber = yield* Effect.forkChild(
              Effect.all([tracker.waitForPerspectiveEvents([e], "P", { timeout: "1 second" }), mark], { concurrency: 2 })
            )
            // No clock movement: a lost wake-up would leave the waiter running forever.
            for (let i = 0; i < 100 && isRunning(fiber); i++) yield* Effect.yieldNow
            expect(isRunning(fiber)).toBe(false)
            const [ok] = yield* Fiber.join(fiber)
            expect(ok).toBe(true)
          }
        })
      )
    )

    it.effect("a wait for perspective A is not woken by perspective B", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const e = uuid()
          yield* track(e, "A")
          yield* track(e, "B")
          const fiber = yield* start(tracker.waitForPerspectiveEvents([e], "A", { timeout: "5 seconds" }))
          yield* tracker.markProcessedByPerspective([e], "B")
          expect(isRunning(fiber)).toBe(true)
          yield* tracker.markProcessedByPerspective([e], "A")
          expect(yield* Fiber.join(fiber)).toBe(true)
        })
      )
    )

    it.effect("all perspectives: five perspectives, four done -> times out", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const e = uuid()
          const perspectives = ["P1", "P2", "P3", "P4", "P5"]
          for (const p of perspectives) yield* track(e, p)
          const fiber = yield* start(tracker.waitForAllPerspectives([e], { timeout: "2 seconds" }))
          for (const p of ["P3", "P1", "P5", "P2"]) yield* tracker.markProcessedByPerspective([e], p)
          expect(isRunning(fiber)).toBe(true)
          yield* TestClock.adjust("2 seconds")
          expect(yield* Fiber.join(fiber)).toBe(false)
        })
      )
    )

    it.effect("all perspectives: completes once every subscriber applied, whatever the order", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const [e1, e2] = [uuid(), uuid()]
          for (const p of ["P1", "P2", "P3"]) yield* track(e1, p)
          yield* track(e2, "P2")
          const fiber = yield* start(tracker.waitForAllPerspectives([e1, e2], { timeout: "2 seconds" }))
          for (const [e, p] of [
            [e1, "P3"],
            [e2, "P2"],
            [e1, "P1"]
          ] as const) {
            yield* tracker.markProcessedByPerspective([e], p)
            expect(isRunning(fiber)).toBe(true)
          }
          yield* tracker.markProcessedByPerspective([e1], "P2")
          expect(yield* Fiber.join(fiber)).toBe(true)
        })
      )
    )

    it.effect("marking the last two perspectives concurrently signals every waiter exactly once", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const e = uuid()
          for (const p of ["P1", "P2", "P3", "P4", "P5"]) yield* track(e, p)
          yield* tracker.markProcessedByPerspective([e], "P1")
          yield* tracker.markProcessedByPerspective([e], "P2")
          yield* tracker.markProcessedByPerspective([e], "P3")
          const before = (yield* stats).signalled
          const waiters = yield* Effect.forEach(
            Array.from({ length: 10 }, (_, i) => i),
            (i) =>
              start(
                i % 2 === 0
                  ? tracker.waitForAllPerspectives([e], { timeout: "5 seconds" })
                  : tracker.waitForEvents([e], { timeout: "5 seconds" })
              )
          )
          yield* Effect.all(
            [
              Effect.andThen(Effect.yieldNow, tracker.markProcessedByPerspective([e], "P4")),
              Effect.andThen(Effect.yieldNow, tracker.markProcessedByPerspective([e], "P5"))
            ],
            { concurrency: 2 }
          )
          expect(yield* Fiber.joinAll(waiters)).toEqual(Array(10).fill(true))
          expect((yield* stats).signalled - before).toBe(10)
        })
      )
    )

    it.effect("unregistering one awaiter cancels only its own waits", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const e = uuid()
          yield* track(e, "P")
          const mine = yield* start(tracker.waitForPerspectiveEvents([e], "P", { awaiterId: "mine", timeout: "1 minute" }))
          const mine2 = yield* start(tracker.waitForAllPerspectives([e], { awaiterId: "mine", timeout: "1 minute" }))
          const theirs = yield* start(tracker.waitForPerspectiveEvents([e], "P", { awaiterId: "theirs", timeout: "1 minute" }))
          expect(yield* tracker.unregisterAwaiter("mine")).toBe(2)
          expect(yield* Fiber.joinAll([mine, mine2])).toEqual([false, false])
          expect(isRunning(theirs)).toBe(true)
          yield* tracker.markProcessed([e])
          expect(yield* Fiber.join(theirs)).toBe(true)
        })
      )
    )
  })

  describe("stale entries", () => {
    const layer = SyncEventTracker.layerWith({ staleAfter: "1 minute", cleanupInterval: "10 seconds" })

    it.effect("are cleaned periodically and their waiters released; fresh entries stay", () =>
      Effect.provide(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const [old, fresh] = [uuid(), uuid()]
          yield* track(old, "P")
          const waiter = yield* start(tracker.waitForPerspectiveEvents([old], "P", { timeout: "1 hour" }))
          yield* TestClock.adjust("30 seconds")
          yield* track(fresh, "P")
          yield* TestClock.adjust("20 seconds")
          expect((yield* stats).tracked).toBe(2) // 50 s: nothing stale yet
          yield* TestClock.adjust("20 seconds") // 70 s: the cleanup at 60 s... drops `old` (tracked at 0)
          expect(yield* tracker.isPending(old, "P")).toBe(false)
          expect(yield* tracker.isPending(fresh, "P")).toBe(true)
          expect(yield* Fiber.join(waiter)).toBe(false)
        }),
        layer
      )
    )

    it.effect("each entry goes when it is stale itself, also when its event was first tracked long before", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          const [e1, e2] = [uuid(), uuid()]
          yield* track(e1, "P") // t = 0
          yield* TestClock.adjust("30 seconds")
          yield* track(e2, "P") // t = 30
          yield* TestClock.adjust("15 seconds")
          yield* track(e1, "Q") // t = 45, the same event as the oldest entry
          yield* TestClock.adjust("15 seconds") // t = 60
          expect(yield* tracker.cleanupStaleEvents("50 seconds")).toBe(1) // cutoff 10: (e1, P)
          expect(yield* tracker.cleanupStaleEvents("20 seconds")).toBe(1) // cutoff 40: (e2, P)
          expect(yield* tracker.isPending(e1, "Q")).toBe(true)
          expect(yield* tracker.cleanupStaleEvents("15 seconds")).toBe(1) // cutoff 45: (e1, Q)
          expect((yield* stats).tracked).toBe(0)
        })
      )
    )

    it.effect("cleanupStaleEvents can be run by hand with its own max age", () =>
      withTracker(
        Effect.gen(function* () {
          const tracker = yield* Tracker
          yield* track(uuid(), "P")
          yield* TestClock.adjust(Duration.seconds(5))
          expect(yield* tracker.cleanupStaleEvents("10 seconds")).toBe(0)
          expect(yield* tracker.cleanupStaleEvents("5 seconds")).toBe(1)
          expect((yield* stats).tracked).toBe(0)
        })
      )
    )
  })
})
