// Live work first for a replay of history (`internal/replayPause.ts`), on the TestClock: the pause before a chunk.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as ReplayPause from "../src/internal/replayPause.js"

/** A pause forked, with the number of live-lag statements it ran. */
const forkPause = (options: {
  readonly other: () => boolean
  readonly lagOver: () => boolean
  readonly lastChunkMillis: number
  /** How long each look at the lag takes (a statement under load). */
  readonly statementMillis?: number
}) =>
  Effect.gen(function* () {
    let statements = 0
    const fiber = yield* Effect.forkChild(
      ReplayPause.pause({
        otherLiveWork: Effect.sync(options.other),
        liveLagOverTarget: Effect.sleep(options.statementMillis ?? 0).pipe(
          Effect.andThen(
            Effect.sync(() => {
              statements++
              return options.lagOver()
            })
          )
        ),
        lastChunkMillis: options.lastChunkMillis
      })
    )
    return { fiber, statements: () => statements }
  })

describe("ReplayPause", () => {
  it.effect("no live work anywhere: the next chunk starts at once, after one look at the schema's lag", () =>
    Effect.gen(function* () {
      const { fiber, statements } = yield* forkPause({ other: () => false, lagOver: () => false, lastChunkMillis: 300 })
      expect(yield* Fiber.join(fiber)).toBe(0)
      expect(statements()).toBe(1)
    })
  )

  it.effect("another tenant's work in the process: waits without a statement, until it is done", () =>
    Effect.gen(function* () {
      let other = true
      const { fiber, statements } = yield* forkPause({ other: () => other, lagOver: () => false, lastChunkMillis: 300 })
      yield* TestClock.adjust(100)
      expect(fiber.pollUnsafe()).toBeUndefined()
      expect(statements()).toBe(0)
      other = false
      yield* TestClock.adjust(ReplayPause.pauseMillis)
      expect(yield* Fiber.join(fiber)).toBe(100 + ReplayPause.pauseMillis)
      expect(statements()).toBe(1)
    })
  )

  it.effect("live work that stays: at most as long as the last chunk took (half the pace kept), and never over a second", () =>
    Effect.gen(function* () {
      const short = yield* forkPause({ other: () => true, lagOver: () => true, lastChunkMillis: 200 })
      yield* TestClock.adjust(199)
      expect(short.fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      expect(yield* Fiber.join(short.fiber)).toBe(200)
      const long = yield* forkPause({ other: () => false, lagOver: () => true, lastChunkMillis: 60_000 })
      yield* TestClock.adjust(ReplayPause.maxPauseMillis)
      expect(yield* Fiber.join(long.fiber)).toBe(ReplayPause.maxPauseMillis)
      expect(long.statements()).toBe(ReplayPause.maxPauseMillis / ReplayPause.pauseMillis)
    })
  )

  it.effect("the bound is the clock's: slow looks at the lag count towards it, not only the sleeps between them", () =>
    Effect.gen(function* () {
      // Each look takes 30 ms: counting the 20 ms sleeps alone, 200 ms of them would take 500 ms of the clock.
      const slow = yield* forkPause({ other: () => false, lagOver: () => true, lastChunkMillis: 200, statementMillis: 30 })
      yield* TestClock.adjust(199)
      expect(slow.fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      expect(yield* Fiber.join(slow.fiber)).toBe(200)
      expect(slow.statements()).toBe(4)
    })
  )
})
