import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Ref } from "effect"
import { TestClock } from "effect/testing"
import * as ProcessedEventCache from "../src/ProcessedEventCache.js"

type Seen = { readonly hook: string; readonly value: unknown }

const withObserver = Effect.gen(function* () {
  const seen = yield* Ref.make<ReadonlyArray<Seen>>([])
  const record = (hook: string) => (value: unknown) => Ref.update(seen, (s) => [...s, { hook, value }])
  const cache = yield* ProcessedEventCache.make({
    retention: Duration.seconds(300),
    observer: {
      deduped: (ids, perspectiveName, streamId) => record("deduped")({ ids, perspectiveName, streamId }),
      markedInFlight: record("markedInFlight"),
      retentionActivated: record("retentionActivated"),
      evicted: record("evicted"),
      removed: record("removed")
    }
  })
  return { cache, seen: Ref.get(seen) }
})

describe("ProcessedEventCache", () => {
  it.effect("an empty cache matches nothing and counts zero", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make()
      expect(yield* cache.contains("w1")).toBe(false)
      expect(yield* cache.count).toBe(0)
      expect(yield* cache.filterUnprocessed(["w1", "w2"], "orders", "s1")).toEqual(["w1", "w2"])
    })
  )

  it.effect("added entries are in flight, match, and never expire before retention is activated", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make({ retention: Duration.seconds(5) })
      yield* cache.markInFlight(["w1", "w2"])
      expect(yield* cache.contains("w1")).toBe(true)
      yield* TestClock.adjust(Duration.days(30))
      expect(yield* cache.contains("w1")).toBe(true)
      expect(yield* cache.evictExpired).toBe(0)
      expect(yield* cache.count).toBe(2)
    })
  )

  it.effect("a duplicate id does not fail and counts once", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make()
      yield* cache.markInFlight(["w1", "w1"])
      yield* cache.markInFlight(["w1"])
      expect(yield* cache.count).toBe(1)
    })
  )

  it.effect("retained entries match before the TTL and stop matching after it, even before eviction", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make({ retention: Duration.seconds(300) })
      yield* cache.markInFlight(["w1"])
      expect(yield* cache.activateRetention).toBe(1)
      yield* TestClock.adjust(Duration.seconds(299))
      expect(yield* cache.contains("w1")).toBe(true)
      expect(yield* cache.count).toBe(1)
      yield* TestClock.adjust(Duration.seconds(1))
      expect(yield* cache.contains("w1")).toBe(false)
      expect(yield* cache.count).toBe(0)
      expect(yield* cache.filterUnprocessed(["w1"], "orders", "s1")).toEqual(["w1"])
      expect(yield* cache.evictExpired).toBe(1)
    })
  )

  it.effect("maxRetained: eviction also drops the oldest retained entries beyond the bound, never in-flight ones", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make({ retention: Duration.seconds(300), maxRetained: 2 })
      yield* cache.markInFlight(["w1", "w2"])
      yield* cache.activateRetention
      yield* TestClock.adjust(Duration.seconds(1))
      yield* cache.markInFlight(["w3"])
      yield* cache.activateRetention
      yield* cache.markInFlight(["w4", "w5"])
      // Three retained (w1, w2, w3) against a bound of two: the oldest goes; the in-flight w4, w5 stay.
      expect(yield* cache.evictExpired).toBe(1)
      expect(yield* cache.contains("w1")).toBe(false)
      for (const id of ["w2", "w3", "w4", "w5"]) expect(yield* cache.contains(id)).toBe(true)
      yield* cache.activateRetention
      expect(yield* cache.evictExpired).toBe(2)
      expect(yield* cache.filterUnprocessed(["w2", "w3", "w4", "w5"], "orders", "s1")).toEqual(["w2", "w3"])
    })
  )

  it.effect("activating retention of some ids starts their TTL only: the others stay in flight, never expiring", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make({ retention: Duration.seconds(100), maxRetained: 1 })
      yield* cache.markInFlight(["mine", "theirs"])
      // "never": not in flight, ignored; "mine" twice counts once.
      expect(yield* cache.activateRetentionOf(["mine", "never", "mine"])).toBe(1)
      yield* TestClock.adjust(Duration.seconds(100))
      expect(yield* cache.contains("mine")).toBe(false)
      expect(yield* cache.contains("theirs")).toBe(true)
      expect(yield* cache.contains("never")).toBe(false)
      expect(yield* cache.evictExpired).toBe(1)
      expect(yield* cache.count).toBe(1)
      expect(yield* cache.activateRetentionOf(["theirs"])).toBe(1)
      expect(yield* cache.contains("theirs")).toBe(true)
    })
  )

  it.effect("activating retention starts the TTL for in-flight entries only; retained keep their start", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make({ retention: Duration.seconds(100) })
      yield* cache.markInFlight(["old"])
      yield* cache.activateRetention
      yield* TestClock.adjust(Duration.seconds(60))
      yield* cache.markInFlight(["new"])
      expect(yield* cache.activateRetention).toBe(1) // only "new" was in flight
      yield* TestClock.adjust(Duration.seconds(50)) // old: 110 s, new: 50 s
      expect(yield* cache.contains("old")).toBe(false)
      expect(yield* cache.contains("new")).toBe(true)
    })
  )

  it.effect("eviction removes only retained entries past the TTL", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make({ retention: Duration.seconds(10) })
      yield* cache.markInFlight(["expired"])
      yield* cache.activateRetention
      yield* TestClock.adjust(Duration.seconds(6))
      yield* cache.markInFlight(["fresh"])
      yield* cache.activateRetention
      yield* cache.markInFlight(["flying"])
      yield* TestClock.adjust(Duration.seconds(5))
      expect(yield* cache.evictExpired).toBe(1)
      expect(yield* cache.contains("fresh")).toBe(true)
      expect(yield* cache.contains("flying")).toBe(true)
      expect(yield* cache.count).toBe(2)
    })
  )

  it.effect("eviction stops at the first live entry yet never leaves an expired one behind, re-applied entries included", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make({ retention: Duration.seconds(10) })
      yield* cache.markInFlight(["a", "b"])
      yield* cache.activateRetention
      yield* TestClock.adjust(Duration.seconds(4))
      yield* cache.markInFlight(["c", "a"]) // "a" applied again: it moves behind "c" with a fresh TTL
      yield* cache.activateRetention
      yield* TestClock.adjust(Duration.seconds(7)) // b: 11 s (expired); c, a: 7 s
      expect(yield* cache.evictExpired).toBe(1)
      expect(yield* cache.contains("a")).toBe(true)
      yield* TestClock.adjust(Duration.seconds(3))
      expect(yield* cache.evictExpired).toBe(2)
      expect(yield* cache.count).toBe(0)
    })
  )

  it.effect("the bound counts each retained entry once, whether it was removed, re-applied or retained again", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make({ retention: Duration.seconds(300), maxRetained: 2 })
      yield* cache.markInFlight(["a", "b", "c", "d"])
      yield* cache.activateRetentionOf(["a", "b", "c", "d"])
      yield* cache.removeRange(["b"]) // gone: it no longer counts against the bound
      yield* TestClock.adjust(Duration.seconds(1))
      yield* cache.markInFlight(["a"]) // applied again, then retained again: now the newest
      yield* cache.activateRetentionOf(["a"])
      // Retained: c, d (oldest) and a: one over the bound, so only c goes.
      expect(yield* cache.evictExpired).toBe(1)
      expect([yield* cache.contains("a"), yield* cache.contains("b"), yield* cache.contains("c"), yield* cache.contains("d")]).toEqual([
        true,
        false,
        false,
        true
      ])
      expect(yield* cache.evictExpired).toBe(0)
      // Many cycles later (the queue's consumed front is dropped along the way), the bound still holds exactly.
      for (let cycle = 0; cycle < 50; cycle++) {
        const ids = Array.from({ length: 100 }, (_, i) => `w${cycle}-${i}`)
        yield* cache.markInFlight(ids)
        yield* cache.activateRetentionOf(ids)
        yield* cache.evictExpired
      }
      expect(yield* cache.count).toBe(2)
      expect(yield* cache.contains("w49-99")).toBe(true)
      expect(yield* cache.contains("w49-97")).toBe(false)
    })
  )

  it.effect("removal (for rewinds) clears entries in either phase", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make()
      yield* cache.markInFlight(["a", "b"])
      yield* cache.activateRetention
      yield* cache.markInFlight(["c"])
      expect(yield* cache.remove("a")).toBe(true)
      expect(yield* cache.remove("missing")).toBe(false)
      expect(yield* cache.removeRange(["b", "c", "missing"])).toBe(2)
      expect(yield* cache.count).toBe(0)
      expect(yield* cache.contains("c")).toBe(false)
    })
  )

  it.effect("re-adding a retained entry makes it in flight again", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make({ retention: Duration.seconds(10) })
      yield* cache.markInFlight(["w"])
      yield* cache.activateRetention
      yield* cache.markInFlight(["w"])
      yield* TestClock.adjust(Duration.seconds(20))
      expect(yield* cache.contains("w")).toBe(true)
    })
  )

  it.effect("observer hooks fire for deduped, in-flight, retention activated, evicted and removed", () =>
    Effect.gen(function* () {
      const { cache, seen } = yield* withObserver
      yield* cache.markInFlight(["w1", "w2"])
      expect(yield* cache.filterUnprocessed(["w1", "w3"], "orders", "s1")).toEqual(["w3"])
      yield* cache.activateRetention
      yield* TestClock.adjust(Duration.seconds(301))
      yield* cache.evictExpired
      yield* cache.markInFlight(["w4"])
      yield* cache.remove("w4")
      expect(yield* seen).toEqual([
        { hook: "markedInFlight", value: ["w1", "w2"] },
        { hook: "deduped", value: { ids: ["w1"], perspectiveName: "orders", streamId: "s1" } },
        { hook: "retentionActivated", value: 2 },
        { hook: "evicted", value: 2 },
        { hook: "markedInFlight", value: ["w4"] },
        { hook: "removed", value: ["w4"] }
      ])
    })
  )

  it.effect("streams and work ids dedup independently", () =>
    Effect.gen(function* () {
      const cache = yield* ProcessedEventCache.make()
      yield* cache.markInFlight(["s1-w1"])
      expect(yield* cache.filterUnprocessed(["s1-w1", "s1-w2"], "orders", "s1")).toEqual(["s1-w2"])
      expect(yield* cache.filterUnprocessed(["s2-w1"], "orders", "s2")).toEqual(["s2-w1"])
    })
  )
})
