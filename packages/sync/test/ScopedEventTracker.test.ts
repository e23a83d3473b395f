import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as SyncFilter from "../src/SyncFilter.js"
import { uuid } from "./support.js"

const filterOf = (builder: SyncFilter.SyncFilterBuilder) => Effect.map(builder.build(), (o) => o.filter)
const ev = (streamId: string, eventType: string) => ({ streamId, eventType, eventId: uuid() })

describe("ScopedEventTracker", () => {
  it.effect("records every emitted event in order", () =>
    ScopedEventTracker.withScope(
      Effect.gen(function* () {
        const s = uuid()
        const events = [ev(s, "A"), ev(s, "B"), ev(uuid(), "A")]
        for (const e of events) yield* ScopedEventTracker.trackEmittedEvent(e)
        expect(yield* ScopedEventTracker.getEmittedEvents()).toEqual(events)
      })
    )
  )

  it.effect("concurrent recording from many fibers loses nothing", () =>
    ScopedEventTracker.withScope(
      Effect.gen(function* () {
        const s = uuid()
        const events = Array.from({ length: 1000 }, () => ev(s, "A"))
        yield* Effect.forEach(events, (e) => Effect.andThen(Effect.yieldNow, ScopedEventTracker.trackEmittedEvent(e)), {
          concurrency: "unbounded"
        })
        const recorded = yield* ScopedEventTracker.getEmittedEvents()
        expect(new Set(recorded.map((e) => e.eventId))).toEqual(new Set(events.map((e) => e.eventId)))
        expect(recorded).toHaveLength(1000)
      })
    )
  )

  it.effect("scopes are isolated; outside a scope nothing is recorded", () =>
    Effect.gen(function* () {
      const s = uuid()
      const [a, b] = yield* Effect.all(
        [
          ScopedEventTracker.withScope(
            Effect.andThen(ScopedEventTracker.trackEmittedEvent(ev(s, "A")), ScopedEventTracker.getEmittedEvents())
          ),
          ScopedEventTracker.withScope(
            Effect.andThen(ScopedEventTracker.trackEmittedEvent(ev(s, "B")), ScopedEventTracker.getEmittedEvents())
          )
        ],
        { concurrency: 2 }
      )
      expect(a.map((e) => e.eventType)).toEqual(["A"])
      expect(b.map((e) => e.eventType)).toEqual(["B"])
      yield* ScopedEventTracker.trackEmittedEvent(ev(s, "C"))
      expect(yield* ScopedEventTracker.getEmittedEvents()).toEqual([])
      expect(yield* ScopedEventTracker.areAllProcessed({ _tag: "All" }, [])).toBe(true)
    })
  )

  describe("queries", () => {
    const s1 = uuid()
    const s2 = uuid()
    const e1 = ev(s1, "A")
    const e2 = ev(s1, "B")
    const e3 = ev(s2, "A")
    const e4 = ev(s2, "C")
    const ids = (builder: SyncFilter.SyncFilterBuilder) =>
      Effect.gen(function* () {
        const events = yield* ScopedEventTracker.getEmittedEvents(yield* filterOf(builder))
        return events.map((e) => e.eventId)
      })
    const seeded = <A, E>(effect: Effect.Effect<A, E>) =>
      ScopedEventTracker.withScope(Effect.andThen(Effect.forEach([e1, e2, e3, e4], ScopedEventTracker.trackEmittedEvent), effect))

    it.effect("by stream, by event type, current scope, all", () =>
      seeded(
        Effect.gen(function* () {
          expect(yield* ids(SyncFilter.forStream(s1))).toEqual([e1.eventId, e2.eventId])
          expect(yield* ids(SyncFilter.forEventTypes("A"))).toEqual([e1.eventId, e3.eventId])
          expect(yield* ids(SyncFilter.forEventTypes("A", "C"))).toEqual([e1.eventId, e3.eventId, e4.eventId])
          expect(yield* ids(SyncFilter.currentScope())).toHaveLength(4)
          expect(yield* ids(SyncFilter.all())).toHaveLength(4)
        })
      )
    )

    it.effect("and is the intersection, or the union", () =>
      seeded(
        Effect.gen(function* () {
          expect(yield* ids(SyncFilter.forStream(s2).andEventTypes("A"))).toEqual([e3.eventId])
          expect(yield* ids(SyncFilter.forStream(s1).orEventTypes("C"))).toEqual([e1.eventId, e2.eventId, e4.eventId])
          // Two streams at once match nothing (build refuses it: MatchesNothing); the tree alone, unbuilt, matches none.
          expect(yield* ScopedEventTracker.getEmittedEvents(SyncFilter.forStream(s1).andStream(s2).filter)).toEqual([])
        })
      )
    )

    it.effect("areAllProcessed: true when nothing matches; false when some or none processed; only matches count", () =>
      seeded(
        Effect.gen(function* () {
          const stream1 = yield* filterOf(SyncFilter.forStream(s1))
          const nothing = yield* filterOf(SyncFilter.forEventTypes("Z"))
          expect(yield* ScopedEventTracker.areAllProcessed(nothing, [])).toBe(true)
          expect(yield* ScopedEventTracker.areAllProcessed(stream1, [])).toBe(false)
          expect(yield* ScopedEventTracker.areAllProcessed(stream1, [e1.eventId])).toBe(false)
          // e3 and e4 (other stream) are unprocessed, but they do not match.
          expect(yield* ScopedEventTracker.areAllProcessed(stream1, [e1.eventId, e2.eventId])).toBe(true)
          expect(yield* ScopedEventTracker.areAllProcessed({ _tag: "All" }, [e1.eventId, e2.eventId])).toBe(false)
        })
      )
    )
  })

  it.effect("fibers forked inside a scope record into it", () =>
    ScopedEventTracker.withScope(
      Effect.gen(function* () {
        const e = ev(uuid(), "A")
        yield* Effect.forkChild(ScopedEventTracker.trackEmittedEvent(e)).pipe(Effect.flatMap(Fiber.join))
        expect(yield* ScopedEventTracker.getEmittedEvents()).toEqual([e])
      })
    )
  )
})
