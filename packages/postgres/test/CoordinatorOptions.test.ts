import { describe, expect, it } from "@effect/vitest"
import { InstanceProvider, WorkerOptions } from "@whizbang/core"
import { Duration, Effect } from "effect"
import * as CoordinatorOptions from "../src/internal/coordinatorOptions.js"
import { PgClient } from "../src/PgClient.js"
import * as PgWorkCoordinator from "../src/PgWorkCoordinator.js"

const validate = (options: CoordinatorOptions.Input) => CoordinatorOptions.decode(options, WorkerOptions.defaults)

describe("PgWorkCoordinator options", () => {
  it.effect("fills the defaults", () =>
    Effect.gen(function* () {
      expect(yield* validate({})).toEqual({
        leaseSeconds: 300,
        debugMode: false,
        maxPerspectiveEventAttempts: 10,
        failureBackoff: { initialMillis: 1000, multiplier: 2, maxMillis: 60_000 },
        abandonStaleInstanceThresholdSeconds: 30,
        affinityGraceMillis: 3000,
        snapshots: { every: 100, keep: 5 },
        queueVacuumEveryRows: 100_000
      })
      expect((yield* validate({ affinityGrace: 0, maxPerspectiveEventAttempts: null })).affinityGraceMillis).toBe(0)
    })
  )

  it.effect("decodes durations once into the numbers the SQL takes", () =>
    Effect.gen(function* () {
      const valid = yield* validate({
        lease: "2 minutes",
        abandonStaleInstanceThreshold: Duration.seconds(10),
        failureBackoff: { initial: "250 millis", max: { seconds: 30 } },
        affinityGrace: 0.2
      })
      expect(valid).toMatchObject({
        leaseSeconds: 120,
        abandonStaleInstanceThresholdSeconds: 10,
        failureBackoff: { initialMillis: 250, multiplier: 2, maxMillis: 30_000 },
        affinityGraceMillis: 1
      })
    })
  )

  const backoff = { initial: 100, multiplier: 2, max: 1000 }
  const bad: ReadonlyArray<readonly [string, CoordinatorOptions.Input]> = [
    ["snapshots.every", { snapshots: { every: 0 } }],
    ["snapshots.keep", { snapshots: { keep: Number.NaN } }],
    ["failureBackoff.initial", { failureBackoff: { ...backoff, initial: 0 } }],
    ["failureBackoff.initial", { failureBackoff: { ...backoff, initial: -5 } }],
    ["failureBackoff.initial", { failureBackoff: { ...backoff, initial: Number.NaN } }],
    ["failureBackoff.multiplier", { failureBackoff: { ...backoff, multiplier: 0.5 } }],
    ["failureBackoff.multiplier", { failureBackoff: { ...backoff, multiplier: Number.NaN } }],
    ["failureBackoff.max", { failureBackoff: { ...backoff, max: 50 } }],
    ["failureBackoff.max", { failureBackoff: { ...backoff, max: Number.POSITIVE_INFINITY } }],
    ["failureBackoff.max", { failureBackoff: { initial: "2 minutes" } }],
    ["affinityGrace", { affinityGrace: Number.NaN }],
    ["affinityGrace", { affinityGrace: -1 }],
    ["lease", { lease: 0 }],
    ["lease", { lease: 300 }],
    ["abandonStaleInstanceThreshold", { abandonStaleInstanceThreshold: "2.5 seconds" }],
    ["maxPerspectiveEventAttempts", { maxPerspectiveEventAttempts: 0 }]
  ]
  for (const [option, input] of bad) {
    it.effect(`${option} ${JSON.stringify(input)} is a PostgresConfigError naming it`, () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(validate(input))
        expect(error._tag).toBe("PostgresConfigError")
        expect(error.option).toBe(option)
        expect(error.message).toContain(option)
      })
    )
  }

  it.effect("the coordinator refuses them with the typed error before touching the database", () =>
    Effect.gen(function* () {
      // A client that fails the test if it is ever used.
      const client = new Proxy(
        {},
        {
          get: () => {
            throw new Error("the database was touched")
          }
        }
      ) as unknown as PgClient["Service"]
      const error = yield* Effect.flip(PgWorkCoordinator.make({ snapshots: { every: 0 } })).pipe(
        Effect.provideService(PgClient, client),
        Effect.provide(InstanceProvider.layerMemory())
      )
      expect(error).toMatchObject({ _tag: "PostgresConfigError", option: "snapshots.every" })
    })
  )
})
