import { describe, expect, it } from "@effect/vitest"
import { PerspectiveStreamLockOptions } from "@whizbang/stream-locker"
import { Duration, Effect } from "effect"

const decode = PerspectiveStreamLockOptions.decode
const rejected = (input: PerspectiveStreamLockOptions.Input) => Effect.flip(decode(input))

describe("PerspectiveStreamLockOptions", () => {
  it.effect("defaults to lockTimeout 30 s and keepAliveInterval 10 s", () =>
    Effect.gen(function* () {
      const options = yield* decode()
      expect(Duration.toMillis(options.lockTimeout)).toBe(30_000)
      expect(Duration.toMillis(options.keepAliveInterval)).toBe(10_000)
      expect(yield* decode({})).toEqual(options)
    })
  )

  it.effect("decodes milliseconds, duration strings and Durations", () =>
    Effect.gen(function* () {
      const options = yield* decode({ lockTimeout: "1 minute", keepAliveInterval: 20_000 })
      expect(Duration.toMillis(options.lockTimeout)).toBe(60_000)
      expect(Duration.toMillis(options.keepAliveInterval)).toBe(20_000)
      const small = yield* decode({ lockTimeout: Duration.millis(100), keepAliveInterval: Duration.millis(49) })
      expect(Duration.toMillis(small.keepAliveInterval)).toBe(49)
    })
  )

  it.effect("lockTimeout must be a finite, positive duration", () =>
    Effect.gen(function* () {
      for (const lockTimeout of [0, -1, "Infinity", Number.NaN, "soon" as Duration.Input] as const) {
        const error = yield* rejected({ lockTimeout })
        expect(error).toMatchObject({
          _tag: "InvalidStreamLockOptions",
          option: "lockTimeout",
          rule: "must be a finite, positive duration"
        })
        expect(error.message).toMatch(/^lockTimeout must be a finite, positive duration, got /)
      }
    })
  )

  it.effect("keepAliveInterval must be a finite, positive duration", () =>
    Effect.gen(function* () {
      for (const keepAliveInterval of [0, -5, Duration.millis(-1), "Infinity"] as const) {
        const error = yield* rejected({ keepAliveInterval })
        expect(error).toMatchObject({ option: "keepAliveInterval", rule: "must be a finite, positive duration" })
      }
    })
  )

  it.effect("keepAliveInterval must be less than lockTimeout / 2 (strictly)", () =>
    Effect.gen(function* () {
      const equal = yield* rejected({ lockTimeout: 30_000, keepAliveInterval: 15_000 })
      expect(equal.option).toBe("keepAliveInterval")
      expect(equal.rule).toMatch(/^must be less than lockTimeout \/ 2/)
      expect(equal.message).toContain("keepAliveInterval must be less than lockTimeout / 2")
      // The defaults of one option are checked against the other's input.
      expect((yield* rejected({ lockTimeout: 20_000 })).option).toBe("keepAliveInterval")
      expect((yield* rejected({ keepAliveInterval: "20 seconds" })).option).toBe("keepAliveInterval")
      const justBelow = yield* decode({ lockTimeout: 30_000, keepAliveInterval: 14_999 })
      expect(Duration.toMillis(justBelow.keepAliveInterval)).toBe(14_999)
    })
  )
})
