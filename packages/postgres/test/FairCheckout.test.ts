import { describe, expect, it } from "@effect/vitest"
import { vi } from "vitest"
import { Effect, Fiber } from "effect"
import type pg from "pg"
import * as FairCheckout from "../src/internal/fairCheckout.js"

/** What the gate reads of a pool: its size. */
const poolOf = (max: number, connectionTimeoutMillis?: number) => ({ options: { max, connectionTimeoutMillis } }) as unknown as pg.Pool

/** Forks a checkout of `schema` that records its name when it gets its place. */
const waiter = (pool: pg.Pool, schema: string, served: Array<string>) =>
  Effect.forkChild(
    Effect.andThen(
      FairCheckout.take(pool, schema),
      Effect.sync(() => served.push(schema))
    )
  )

describe("fairCheckout", () => {
  it.effect("gives places up to the pool's size at once, then in turn across schemas, not in arrival order", () =>
    Effect.gen(function* () {
      const pool = poolOf(3)
      yield* FairCheckout.take(pool, "other")
      yield* FairCheckout.take(pool, "other")
      yield* FairCheckout.take(pool, "other")
      const served: Array<string> = []
      // The replaying tenant's consumers queue three checkouts before a quiet tenant's one arrives.
      for (const schema of ["replay", "replay", "replay", "quiet"]) yield* waiter(pool, schema, served)
      yield* Effect.yieldNow
      expect(FairCheckout.snapshot(pool)).toEqual({ inUse: 3, waiting: 4 })
      FairCheckout.give(pool, "other")
      yield* Effect.yieldNow
      FairCheckout.give(pool, "other")
      yield* Effect.yieldNow
      // First come first served would have given both to "replay".
      expect(served).toEqual(["replay", "quiet"])
      expect(FairCheckout.snapshot(pool)).toEqual({ inUse: 3, waiting: 2 })
    })
  )

  it.effect("while other schemas use the pool, a schema holds one place at a time; alone for a second, the whole pool", () =>
    Effect.gen(function* () {
      let now = 1_000_000
      const clock = vi.spyOn(Date, "now").mockImplementation(() => now)
      try {
        const pool = poolOf(5)
        const served: Array<string> = []
        // A backlog alone takes the whole pool.
        for (let i = 0; i < 5; i++) yield* FairCheckout.take(pool, "replay")
        for (let i = 0; i < 4; i++) FairCheckout.give(pool, "replay")
        yield* FairCheckout.take(pool, "quiet")
        // A quiet tenant holds a place: the backlog's second checkout waits though three places are free.
        yield* waiter(pool, "replay", served)
        yield* Effect.yieldNow
        expect(served).toEqual([])
        expect(FairCheckout.snapshot(pool)).toEqual({ inUse: 2, waiting: 1 })
        // The quiet tenant done, its checkout is recent: the backlog still waits, and its own release serves it.
        FairCheckout.give(pool, "quiet")
        now += FairCheckout.othersRecentMillis - 1
        yield* FairCheckout.take(pool, "quiet")
        FairCheckout.give(pool, "quiet")
        yield* Effect.yieldNow
        expect(served).toEqual([])
        FairCheckout.give(pool, "replay")
        yield* Effect.yieldNow
        expect(served).toEqual(["replay"])
        expect(FairCheckout.snapshot(pool)).toEqual({ inUse: 1, waiting: 0 })
        // A second without another schema: the backlog takes every place again.
        now += FairCheckout.othersRecentMillis
        for (let i = 0; i < 4; i++) yield* FairCheckout.take(pool, "replay")
        expect(FairCheckout.snapshot(pool)).toEqual({ inUse: 5, waiting: 0 })
      } finally {
        clock.mockRestore()
      }
    })
  )

  it.effect("one schema alone is served in arrival order", () =>
    Effect.gen(function* () {
      const pool = poolOf(1)
      yield* FairCheckout.take(pool, "s")
      const order: Array<number> = []
      for (const n of [1, 2, 3])
        yield* Effect.forkChild(
          Effect.andThen(
            FairCheckout.take(pool, "s"),
            Effect.sync(() => order.push(n))
          )
        )
      yield* Effect.yieldNow
      for (let i = 0; i < 3; i++) {
        FairCheckout.give(pool, "s")
        yield* Effect.yieldNow
      }
      expect(order).toEqual([1, 2, 3])
    })
  )

  it.effect("an interrupted waiter leaves the queue; a raised pool size is used at the next turn", () =>
    Effect.gen(function* () {
      const pool = poolOf(1)
      yield* FairCheckout.take(pool, "a")
      const served: Array<string> = []
      const gone = yield* waiter(pool, "b", served)
      yield* waiter(pool, "c", served)
      yield* Effect.yieldNow
      yield* Fiber.interrupt(gone)
      expect(FairCheckout.snapshot(pool)).toEqual({ inUse: 1, waiting: 1 })
      ;(pool.options as { max: number }).max = 3
      yield* waiter(pool, "d", served)
      yield* Effect.yieldNow
      expect(served).toEqual(["c", "d"])
      expect(FairCheckout.snapshot(pool)).toEqual({ inUse: 3, waiting: 0 })
    })
  )

  it.live("a turn that does not come within the pool's connectionTimeoutMillis fails as pg's pool does, and leaves the queue", () =>
    Effect.gen(function* () {
      const pool = poolOf(1, 30)
      yield* FairCheckout.take(pool, "a")
      const error = yield* Effect.flip(FairCheckout.take(pool, "b"))
      expect(error.message).toBe("timeout exceeded when trying to connect")
      expect(FairCheckout.snapshot(pool)).toEqual({ inUse: 1, waiting: 0 })
      FairCheckout.give(pool, "a")
      expect(FairCheckout.snapshot(pool)).toEqual({ inUse: 0, waiting: 0 })
    })
  )
})
