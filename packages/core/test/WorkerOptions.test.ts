import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as WorkerOptions from "../src/WorkerOptions.js"

const failure = (input: unknown) => Effect.flip(WorkerOptions.decode(input))

describe("WorkerOptions", () => {
  it.effect("fills every documented default", () =>
    Effect.gen(function* () {
      const options = yield* WorkerOptions.decode({})
      expect(options).toEqual({
        pollingIntervalMilliseconds: 1000,
        notifyHealthyPollingIntervalMilliseconds: 1000,
        maxPerspectiveEventAttempts: 10,
        leaseSeconds: 300,
        abandonStaleInstanceThresholdSeconds: 30,
        debugMode: false,
        partitionCount: 10_000,
        idleThresholdPolls: 2,
        perspectiveBatchSize: 100,
        maxConcurrentPerspectives: 30,
        maxConcurrentDrainConsumers: 4,
        maxStreamsPerBatch: 300,
        drainLoopMaxIterations: 5,
        drainLoopRefetchMinBatch: 2,
        drainBatcher: { slidingWindowMilliseconds: 300, maxWaitMilliseconds: 3000, maxSize: 1000 }
      })
      expect(WorkerOptions.defaults).toEqual(options)
      expect(yield* WorkerOptions.decode()).toEqual(options)
    })
  )

  it.effect("keeps given values and fills the rest of a nested group", () =>
    Effect.gen(function* () {
      const options = yield* WorkerOptions.decode({ leaseSeconds: 600, debugMode: true, drainBatcher: { maxSize: 50 } })
      expect(options.leaseSeconds).toBe(600)
      expect(options.debugMode).toBe(true)
      expect(options.drainBatcher).toEqual({ slidingWindowMilliseconds: 300, maxWaitMilliseconds: 3000, maxSize: 50 })
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

  const positiveIntegers = [
    "pollingIntervalMilliseconds",
    "notifyHealthyPollingIntervalMilliseconds",
    "maxPerspectiveEventAttempts",
    "leaseSeconds",
    "abandonStaleInstanceThresholdSeconds",
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

  for (const path of ["slidingWindowMilliseconds", "maxWaitMilliseconds", "maxSize"] as const) {
    it.effect(`drainBatcher.${path} = 0 is rejected`, () =>
      Effect.gen(function* () {
        const error = yield* failure({ drainBatcher: { [path]: 0 } })
        expect(error.issues[0]).toEqual({ path: `drainBatcher.${path}`, message: "must be a positive integer, got 0" })
      })
    )
  }

  it.effect("retryOptions is not a worker option (nothing would read it): refused, not ignored", () =>
    Effect.gen(function* () {
      const error = yield* failure({ retryOptions: { retryTimeoutSeconds: 1 } })
      expect(error.issues).toEqual([{ path: "retryOptions", message: "is not a known option" }])
    })
  )

  it.effect("drainBatcher.maxWaitMilliseconds must be at least the sliding window", () =>
    Effect.gen(function* () {
      const error = yield* failure({ drainBatcher: { slidingWindowMilliseconds: 500, maxWaitMilliseconds: 100 } })
      expect(error.issues).toEqual([
        { path: "drainBatcher.maxWaitMilliseconds", message: "must be >= slidingWindowMilliseconds (500), got 100" }
      ])
    })
  )

  it.effect("wrong types and unknown keys are named too, all in one error", () =>
    Effect.gen(function* () {
      const error = yield* failure({ leaseSeconds: "300", debugMode: "yes", leaseSecs: 5 })
      expect(error.issues.map((i) => i.path).sort()).toEqual(["debugMode", "leaseSeconds", "leaseSecs"])
      expect(error.issues.find((i) => i.path === "leaseSecs")?.message).toBe("is not a known option")
      expect(error.issues.find((i) => i.path === "leaseSeconds")?.message).toBe('must be of type number, got "300"')
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
