import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Result, Schema } from "effect"
import * as WorkerOptions from "../src/WorkerOptions.js"

const failure = (input: unknown) => Effect.flip(WorkerOptions.decode(input))

describe("WorkerOptions", () => {
  it.effect("fills every documented default", () =>
    Effect.gen(function* () {
      const options = yield* WorkerOptions.decode({})
      expect(options).toEqual({
        pollingInterval: Duration.seconds(1),
        notifyHealthyPollingInterval: Duration.seconds(1),
        maxPerspectiveEventAttempts: 10,
        lease: Duration.minutes(5),
        abandonStaleInstanceThreshold: Duration.seconds(30),
        debugMode: false,
        partitionCount: 10_000,
        idleThresholdPolls: 2,
        perspectiveBatchSize: 100,
        maxConcurrentPerspectives: 30,
        maxConcurrentDrainConsumers: 4,
        maxStreamsPerBatch: 300,
        drainLoopMaxIterations: 5,
        drainLoopRefetchMinBatch: 2,
        drainBatcher: { slidingWindow: Duration.millis(300), maxWait: Duration.seconds(3), maxSize: 1000 }
      })
      expect(WorkerOptions.defaults).toEqual(options)
      expect(yield* WorkerOptions.decode()).toEqual(options)
    })
  )

  it.effect("keeps given values and fills the rest of a nested group", () =>
    Effect.gen(function* () {
      const options = yield* WorkerOptions.decode({ lease: "10 minutes", debugMode: true, drainBatcher: { maxSize: 50 } })
      expect(Duration.toSeconds(options.lease)).toBe(600)
      expect(options.debugMode).toBe(true)
      expect(options.drainBatcher).toEqual({ slidingWindow: Duration.millis(300), maxWait: Duration.seconds(3), maxSize: 50 })
    })
  )

  it.effect("maxPerspectiveEventAttempts accepts null (no limit)", () =>
    Effect.gen(function* () {
      expect((yield* WorkerOptions.decode({ maxPerspectiveEventAttempts: null })).maxPerspectiveEventAttempts).toBeNull()
    })
  )

  it.effect("a bad value fails with one error naming the option path and the rule", () =>
    Effect.gen(function* () {
      const error = yield* failure({ drainBatcher: { maxSize: -1 } })
      expect(error._tag).toBe("InvalidWorkerOptions")
      expect(error.issues).toEqual([{ path: "drainBatcher.maxSize", message: "must be a positive integer, got -1" }])
      expect(error.message).toContain("drainBatcher.maxSize must be a positive integer, got -1")
    })
  )

  it.effect("every form of Duration.Input is accepted, and decoded to the same Duration", () =>
    Effect.gen(function* () {
      for (const lease of [Duration.seconds(90), "90 seconds", 90_000, { minutes: 1, seconds: 30 }, [90, 0] as const, 90_000_000_000n]) {
        const options = yield* WorkerOptions.decode({ lease })
        expect(Duration.toMillis(options.lease), String(lease)).toBe(90_000)
      }
      const options = yield* WorkerOptions.decode({
        pollingInterval: "250 millis",
        drainBatcher: { slidingWindow: 0.5, maxWait: "1 millis" }
      })
      expect(Duration.toMillis(options.pollingInterval)).toBe(250)
      expect(Duration.toMillis(options.drainBatcher.slidingWindow)).toBe(0.5)
    })
  )

  const positiveDurations = ["pollingInterval", "notifyHealthyPollingInterval"] as const
  for (const name of positiveDurations) {
    for (const [bad, shown] of [
      [0, "0 (a number is milliseconds)"],
      [-5, "-5 (a number is milliseconds)"],
      [Number.NaN, "NaN (a number is milliseconds)"],
      [Number.POSITIVE_INFINITY, "Infinity (a number is milliseconds)"],
      ["Infinity", '"Infinity"'],
      ["soon", '"soon"'],
      [{}, "{}"],
      [{ secs: 5 }, '{"secs":5}'],
      [true, "true"]
    ] as const) {
      it.effect(`${name} = ${shown} is rejected`, () =>
        Effect.gen(function* () {
          const error = yield* failure({ [name]: bad })
          expect(error.issues).toEqual([{ path: name, message: `must be a finite, positive duration, got ${shown}` }])
        })
      )
    }
  }

  for (const name of ["lease", "abandonStaleInstanceThreshold"] as const) {
    for (const [bad, shown] of [
      [300, "300 (a number is milliseconds)"],
      ["1.5 seconds", '"1.5 seconds"'],
      ["0 seconds", '"0 seconds"'],
      ["-30 seconds", '"-30 seconds"'],
      [Number.NaN, "NaN (a number is milliseconds)"],
      ["Infinity", '"Infinity"']
    ] as const) {
      it.effect(`${name} = ${shown} is rejected: whole seconds only (the SQL takes integer seconds)`, () =>
        Effect.gen(function* () {
          const error = yield* failure({ [name]: bad })
          expect(error.issues).toEqual([{ path: name, message: `must be a whole number of seconds, at least 1 second, got ${shown}` }])
        })
      )
    }
  }

  const positiveIntegers = [
    "maxPerspectiveEventAttempts",
    "partitionCount",
    "idleThresholdPolls",
    "perspectiveBatchSize",
    "maxConcurrentPerspectives",
    "maxConcurrentDrainConsumers",
    "maxStreamsPerBatch",
    "drainLoopMaxIterations",
    "drainLoopRefetchMinBatch"
  ] as const
  for (const name of positiveIntegers) {
    for (const bad of [0, -5, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      it.effect(`${name} = ${bad} is rejected`, () =>
        Effect.gen(function* () {
          const error = yield* failure({ [name]: bad })
          expect(error.issues).toEqual([{ path: name, message: `must be a positive integer, got ${bad}` }])
        })
      )
    }
  }

  for (const [path, message] of [
    ["slidingWindow", "must be a finite, positive duration, got 0 (a number is milliseconds)"],
    ["maxWait", "must be a finite, positive duration, got 0 (a number is milliseconds)"],
    ["maxSize", "must be a positive integer, got 0"]
  ] as const) {
    it.effect(`drainBatcher.${path} = 0 is rejected`, () =>
      Effect.gen(function* () {
        const error = yield* failure({ drainBatcher: { [path]: 0 } })
        expect(error.issues[0]).toEqual({ path: `drainBatcher.${path}`, message })
      })
    )
  }

  it.effect("retryOptions is not a worker option (nothing would read it): refused, not ignored", () =>
    Effect.gen(function* () {
      const error = yield* failure({ retryOptions: { retryTimeout: "1 second" } })
      expect(error.issues).toEqual([{ path: "retryOptions", message: "is not a known option" }])
    })
  )

  it.effect("drainBatcher.maxWait must be at least the sliding window", () =>
    Effect.gen(function* () {
      const error = yield* failure({ drainBatcher: { slidingWindow: "500 millis", maxWait: 100 } })
      expect(error.issues).toEqual([{ path: "drainBatcher.maxWait", message: "must be >= slidingWindow (500ms), got 100ms" }])
    })
  )

  it.effect("the old *Seconds / *Milliseconds names are refused with their new name (JavaScript callers get no type error)", () =>
    Effect.gen(function* () {
      const error = yield* failure({ leaseSeconds: 300, drainBatcher: { slidingWindowMilliseconds: 5 } })
      expect(error.issues).toEqual([
        { path: "leaseSeconds", message: "is not a known option: it is now `lease`, a Duration.Input" },
        { path: "drainBatcher.slidingWindowMilliseconds", message: "is not a known option: it is now `slidingWindow`, a Duration.Input" }
      ])
    })
  )

  it.effect("RetryOptions: durations too, maxBackoff >= retryTimeout", () =>
    Effect.gen(function* () {
      expect(WorkerOptions.defaultRetryOptions).toEqual({
        retryTimeout: Duration.seconds(1),
        enableExponentialBackoff: true,
        backoffMultiplier: 2,
        maxBackoff: Duration.seconds(60)
      })
      const decode = Schema.decodeUnknownResult(WorkerOptions.RetryOptions)
      expect(Result.isFailure(decode({ retryTimeout: "2 seconds", maxBackoff: "1 second" }))).toBe(true)
      expect(Result.isFailure(decode({ retryTimeout: -1 }))).toBe(true)
      const ok = decode({ retryTimeout: "500 millis", maxBackoff: "5 seconds" })
      expect(Result.isSuccess(ok) && Duration.toMillis(ok.success.retryTimeout)).toBe(500)
    })
  )

  it.effect("wrong types and unknown keys are named too, all in one error", () =>
    Effect.gen(function* () {
      const error = yield* failure({ lease: "300", debugMode: "yes", leaseSecs: 5 })
      expect(error.issues.map((i) => i.path).sort()).toEqual(["debugMode", "lease", "leaseSecs"])
      expect(error.issues.find((i) => i.path === "leaseSecs")?.message).toBe("is not a known option")
      expect(error.issues.find((i) => i.path === "lease")?.message).toBe('must be a whole number of seconds, at least 1 second, got "300"')
    })
  )

  it.effect("a non-object input is rejected", () =>
    Effect.gen(function* () {
      const error = yield* failure(42)
      expect(error.issues).toHaveLength(1)
      expect(error.issues[0]?.path).toBe("")
    })
  )
})
