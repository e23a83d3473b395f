import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Redacted } from "effect"
import { Whizbang } from "whizbang"
import * as Fixtures from "./fixtures.js"

const url = "postgres://nobody@127.0.0.1:1/none"

// Validation needs no server: a refused configuration never connects.
const refused = (config: Partial<Whizbang.Config>) =>
  Effect.gen(function* () {
    const { events, perspectives } = yield* Fixtures.definitions
    return yield* Effect.flip(Whizbang.validate({ databaseUrl: url, events, perspectives, ...config }))
  })

describe("Whizbang.validate", () => {
  it.effect("accepts the defaults", () =>
    Effect.gen(function* () {
      const { events, perspectives } = yield* Fixtures.definitions
      yield* Whizbang.validate({ databaseUrl: Redacted.make(url), events, perspectives })
    })
  )

  it.effect("a missing or malformed database URL is a PostgresConfigError naming databaseUrl (no libpq fallback)", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<[unknown, RegExp]> = [
        [undefined, /databaseUrl is missing/],
        ["", /non-empty/],
        ["not a url", /is not a URL/],
        ["mysql://u@h/db", /postgres:\/\/ or postgresql:\/\//],
        ["postgres:///db", /names no host/],
        ["postgres://u@localhost", /names no database/],
        ["postgres://u@localhost/", /names no database/]
      ]
      for (const [databaseUrl, message] of cases) {
        const error = yield* refused({ databaseUrl: databaseUrl as string })
        expect(error).toMatchObject({ _tag: "PostgresConfigError", option: "databaseUrl" })
        expect(error.message).toMatch(message)
      }
      // A socket directory in `?host=` names the host.
      const { events, perspectives } = yield* Fixtures.definitions
      yield* Whizbang.validate({ databaseUrl: "postgres:///db?host=/var/run/postgresql", events, perspectives })
    })
  )

  it.effect("every option of every composed layer is checked, naming the option", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<[Partial<Whizbang.Config>, string, string]> = [
        [{ maxConnections: 0 }, "PostgresConfigError", "maxConnections"],
        [{ maxConnections: 2.5 }, "PostgresConfigError", "maxConnections"],
        [{ schema: "pg_catalog" }, "PostgresConfigError", "schema"],
        [{ applicationName: "x".repeat(64) }, "PostgresConfigError", "applicationName"],
        [{ serviceName: "é".repeat(70) }, "PostgresConfigError", "applicationName"],
        [{ serviceName: " " }, "PostgresConfigError", "serviceName"],
        [{ preparedStatements: "no" as unknown as boolean }, "PostgresConfigError", "preparedStatements"],
        [{ jit: "off" as unknown as boolean }, "PostgresConfigError", "jit"],
        [{ instanceId: "not-a-uuid" }, "PostgresConfigError", "instanceId"],
        [{ failureBackoff: { initial: -1, multiplier: 2, max: 10 } }, "PostgresConfigError", "failureBackoff.initial"],
        [{ failureBackoff: { initial: Number.NaN } }, "PostgresConfigError", "failureBackoff.initial"],
        [{ failureBackoff: { initial: 10, multiplier: Number.NaN, max: 10 } }, "PostgresConfigError", "failureBackoff.multiplier"],
        [{ failureBackoff: { initial: "10 millis", multiplier: 2, max: "5 millis" } }, "PostgresConfigError", "failureBackoff.max"],
        [{ failureBackoff: { initial: "2 minutes" } }, "PostgresConfigError", "failureBackoff.max"],
        [{ affinityGrace: Number.NaN }, "PostgresConfigError", "affinityGrace"],
        [{ affinityGrace: "-1 second" }, "PostgresConfigError", "affinityGrace"],
        [{ registry: { heartbeatInterval: 0 } }, "PostgresConfigError", "registry.heartbeatInterval"],
        [{ health: { maxLag: "Infinity" } }, "PostgresConfigError", "health.maxLag"],
        [{ options: { lease: 300 } }, "InvalidWorkerOptions", ""],
        [{ snapshots: { every: 0 } }, "PostgresConfigError", "snapshots.every"],
        [{ streamLocks: { lockTimeout: "1 second", keepAliveInterval: "1 second" } }, "InvalidStreamLockOptions", "keepAliveInterval"],
        [{ rewind: { debounceWindow: -5 } }, "InvalidRebuildOptions", "rewind.debounceWindow"],
        [{ rewind: { startupScan: "sometimes" as never } }, "InvalidRebuildOptions", "rewind.startupScan"],
        [{ health: { maxFailedCursors: -1 } }, "PostgresConfigError", "health.maxFailedCursors"],
        [{ watchdog: { interval: "0 millis" } }, "PostgresConfigError", "watchdog.interval"],
        [{ trackedEventTypes: { Deposited: [""] } }, "TrackedEventTypeRegistryError", ""]
      ]
      for (const [config, tag, option] of cases) {
        const error = yield* refused(config)
        expect(error._tag, JSON.stringify(config)).toBe(tag)
        if (option !== "") expect((error as { option?: string }).option, JSON.stringify(config)).toBe(option)
      }
      const options = yield* refused({ options: { maxStreamsPerBatch: -1 } })
      expect(options._tag).toBe("InvalidWorkerOptions")
      expect(options.message).toMatch(/maxStreamsPerBatch/)
      // A number is milliseconds: `lease: 300` (a leftover of `leaseSeconds: 300`) is 300 ms, and says so.
      const lease = yield* refused({ options: { lease: 300 } })
      expect(lease.message).toContain("lease must be a whole number of seconds, at least 1 second, got 300 (a number is milliseconds)")
      const affinity = yield* refused({ affinityGrace: "-1 second" })
      expect(affinity.message).toBe('affinityGrace must be a finite duration >= 0, got "-1 second"')
    })
  )

  it.effect("wiring problems (a perspective name, an unknown event type) are refused before connecting too", () =>
    Effect.gen(function* () {
      const { events, perspectives } = yield* Fixtures.definitions
      const renamed = { ...perspectives[0]!, name: "Bad-Name" }
      const error = yield* Effect.flip(Whizbang.validate({ databaseUrl: url, events, perspectives: [renamed] }))
      expect(error._tag).toBe("InvalidPerspectiveName")
      const unknown = { ...perspectives[0]!, eventTypes: ["Nope"] }
      const wiring = yield* Effect.flip(Whizbang.validate({ databaseUrl: url, events, perspectives: [unknown as never] }))
      expect(wiring._tag).toBe("WorkerConfigurationError")
    })
  )
})

describe("Whizbang.layerTenants' worker defaults", () => {
  it.effect(
    "a tenant's worker claims 50 streams at a time, polls every 10 s while notified, is idle after one empty claim; given options win",
    () =>
      Effect.gen(function* () {
        const { events, perspectives } = yield* Fixtures.definitions
        const base = { databaseUrl: url, events, perspectives }
        const defaults = yield* Whizbang.decode(Whizbang.tenantDefaults(base))
        expect(defaults.pipeline.pipeline.worker.options.maxStreamsPerBatch).toBe(50)
        expect(defaults.pipeline.pipeline.worker.options.idleThresholdPolls).toBe(1)
        expect(Duration.toMillis(defaults.pipeline.pipeline.worker.options.notifyHealthyPollingInterval)).toBe(10_000)
        const given = yield* Whizbang.decode(Whizbang.tenantDefaults({ ...base, options: { maxStreamsPerBatch: 300 } }))
        expect(given.pipeline.pipeline.worker.options.maxStreamsPerBatch).toBe(300)
        // A single-tenant service keeps the worker's own default.
        expect((yield* Whizbang.decode(base)).pipeline.pipeline.worker.options.maxStreamsPerBatch).toBe(300)
      })
  )
})
