import { describe, expect, it } from "@effect/vitest"
import { InstanceProvider, WorkerOptions } from "@whizbang/core"
import { Effect } from "effect"
import * as CoordinatorOptions from "../src/internal/coordinatorOptions.js"
import { PgClient } from "../src/PgClient.js"
import * as PgWorkCoordinator from "../src/PgWorkCoordinator.js"

const validate = (options: CoordinatorOptions.Input) => CoordinatorOptions.validate(options, WorkerOptions.defaults)

describe("PgWorkCoordinator options", () => {
  it.effect("fills the defaults", () =>
    Effect.gen(function* () {
      expect(yield* validate({})).toEqual({
        leaseSeconds: 300,
        debugMode: false,
        maxPerspectiveEventAttempts: 10,
        failureBackoff: { initialMilliseconds: 1000, multiplier: 2, maxMilliseconds: 60_000 },
        abandonStaleInstanceThresholdSeconds: 30,
        affinityGraceMilliseconds: 3000,
        snapshots: { every: 100, keep: 5 }
      })
      expect((yield* validate({ affinityGraceMilliseconds: 0, maxPerspectiveEventAttempts: null })).affinityGraceMilliseconds).toBe(0)
    })
  )

  const backoff = { initialMilliseconds: 100, multiplier: 2, maxMilliseconds: 1000 }
  const bad: ReadonlyArray<readonly [string, CoordinatorOptions.Input]> = [
    ["snapshots.every", { snapshots: { every: 0 } }],
    ["snapshots.keep", { snapshots: { keep: Number.NaN } }],
    ["failureBackoff.initialMilliseconds", { failureBackoff: { ...backoff, initialMilliseconds: 0 } }],
    ["failureBackoff.initialMilliseconds", { failureBackoff: { ...backoff, initialMilliseconds: -5 } }],
    ["failureBackoff.initialMilliseconds", { failureBackoff: { ...backoff, initialMilliseconds: Number.NaN } }],
    ["failureBackoff.multiplier", { failureBackoff: { ...backoff, multiplier: 0.5 } }],
    ["failureBackoff.multiplier", { failureBackoff: { ...backoff, multiplier: Number.NaN } }],
    ["failureBackoff.maxMilliseconds", { failureBackoff: { ...backoff, maxMilliseconds: 50 } }],
    ["failureBackoff.maxMilliseconds", { failureBackoff: { ...backoff, maxMilliseconds: Number.POSITIVE_INFINITY } }],
    ["affinityGraceMilliseconds", { affinityGraceMilliseconds: Number.NaN }],
    ["affinityGraceMilliseconds", { affinityGraceMilliseconds: -1 }],
    ["leaseSeconds", { leaseSeconds: 0 }],
    ["abandonStaleInstanceThresholdSeconds", { abandonStaleInstanceThresholdSeconds: 2.5 }],
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
