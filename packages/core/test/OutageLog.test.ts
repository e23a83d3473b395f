import { describe, expect, it } from "@effect/vitest"
import { OutageLog } from "@whizbang/core/internal"
import { Cause, Data, Duration, Effect, Fiber, Logger, References } from "effect"
import { TestClock } from "effect/testing"

class Unreachable extends Data.TaggedError("Unreachable")<{ readonly message: string }> {}

interface Entry {
  readonly level: string
  readonly message: string
  readonly withCause: boolean
}

/** Runs `body` with every log entry, debug included, recorded. */
const recorded = <A, E>(body: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const entries: Array<Entry> = []
    const logger = Logger.make((options) => {
      const parts: ReadonlyArray<unknown> = Array.isArray(options.message) ? options.message : [options.message]
      entries.push({
        level: options.logLevel,
        message: parts.filter((p) => typeof p === "string").join(" "),
        withCause: options.cause.reasons.length > 0
      })
    })
    yield* body.pipe(Effect.provide(Logger.layer([logger])), Effect.provideService(References.MinimumLogLevel, "Debug"))
    return entries
  })

const down = Effect.fail(new Unreachable({ message: "connect ECONNREFUSED 127.0.0.1:5432" }))

describe("OutageLog", () => {
  it.effect("a run of failures is one warning with the message only, a reminder a minute on, and one line when it recovers", () =>
    Effect.gen(function* () {
      const entries = yield* recorded(
        Effect.gen(function* () {
          const log = yield* OutageLog.make("claiming work")
          for (let i = 0; i < 30; i++) {
            expect(yield* log.guard(down, "fallback")).toBe("fallback")
            yield* TestClock.adjust(Duration.seconds(1))
          }
          // 30 s in: still one warning. A minute after the first failure: a reminder.
          for (let i = 0; i < 31; i++) {
            yield* log.guard(down, [])
            yield* TestClock.adjust(Duration.seconds(1))
          }
          expect(yield* log.guard(Effect.succeed(7), 0)).toBe(7)
          // Healthy again: nothing more.
          yield* log.guard(Effect.succeed(8), 0)
          yield* log.succeeded
        })
      )
      const above = entries.filter((e) => e.level !== "Debug")
      expect(above).toEqual([
        {
          level: "Warn",
          message: "claiming work failed: connect ECONNREFUSED 127.0.0.1:5432; retrying quietly until it recovers",
          withCause: false
        },
        {
          level: "Warn",
          message: "claiming work still failing after 60 s (61 failed attempts): connect ECONNREFUSED 127.0.0.1:5432",
          withCause: false
        },
        { level: "Info", message: "claiming work recovered after 61 s (61 failed attempts)", withCause: false }
      ])
      // Every failure at debug level, with its cause (the stack trace).
      const debug = entries.filter((e) => e.level === "Debug")
      expect(debug).toHaveLength(61)
      expect(debug.every((e) => e.withCause)).toBe(true)
    })
  )

  it.effect("a new run after a recovery warns again; a defect is named by its message", () =>
    Effect.gen(function* () {
      const entries = yield* recorded(
        Effect.gen(function* () {
          const log = yield* OutageLog.make("instance heartbeat")
          yield* log.failed(Cause.fail(new Unreachable({ message: "terminating connection due to administrator command" })))
          yield* TestClock.adjust(Duration.seconds(3))
          yield* log.succeeded
          yield* log.guard(Effect.die(new Error("pool is closed")), undefined)
          yield* log.succeeded
        })
      )
      expect(entries.filter((e) => e.level !== "Debug").map((e) => e.message)).toEqual([
        "instance heartbeat failed: terminating connection due to administrator command; retrying quietly until it recovers",
        "instance heartbeat recovered after 3 s (1 failed attempt)",
        "instance heartbeat failed: pool is closed; retrying quietly until it recovers",
        "instance heartbeat recovered after 0 s (1 failed attempt)"
      ])
    })
  )

  it.effect("an interruption is neither logged nor swallowed", () =>
    Effect.gen(function* () {
      const entries = yield* recorded(
        Effect.gen(function* () {
          const log = yield* OutageLog.make("watchdog diagnosis")
          const fiber = yield* Effect.forkChild(log.guard(Effect.never, "fallback"))
          yield* Effect.yieldNow
          yield* Fiber.interrupt(fiber)
          const exit = yield* Fiber.await(fiber)
          expect(exit._tag).toBe("Failure")
          yield* log.failed(Cause.interrupt())
        })
      )
      expect(entries).toEqual([])
    })
  )
})
