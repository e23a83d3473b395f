import { EventId } from "@whizbang/core"
import { Effect, type Fiber } from "effect"
import { SyncEventTracker } from "../src/SyncEventTracker.js"

export const uuid = (): string => EventId.unsafeMake()

/** Forks so the fiber runs up to its first suspension before this returns. */
export const start = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.forkChild(effect, { startImmediately: true })

export const isRunning = (fiber: Fiber.Fiber<unknown, unknown>): boolean => fiber.pollUnsafe() === undefined

/** Yields (never sleeps) until the tracker holds `count` waiters; fails the test if that never happens. */
export const waitersRegistered = (count: number) =>
  Effect.gen(function* () {
    const tracker = yield* SyncEventTracker
    for (let i = 0; i < 100; i++) {
      if ((yield* tracker.stats).waiters >= count) return
      yield* Effect.yieldNow
    }
    return yield* Effect.die(new Error(`expected ${count} registered waiters, have ${(yield* tracker.stats).waiters}`))
  })
