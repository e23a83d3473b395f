import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { PgClient } from "../src/PgClient.js"
import * as PgHealth from "../src/PgHealth.js"
import * as PgWatchdog from "../src/PgWatchdog.js"

// A client that fails the test if it is ever used: a refused layer touches no database.
const untouchable = new Proxy(
  {},
  {
    get: () => {
      throw new Error("the database was touched")
    }
  }
) as unknown as PgClient["Service"]

const build = <A, E>(layer: Layer.Layer<A, E, PgClient>) =>
  Effect.scoped(Layer.build(layer)).pipe(Effect.provideService(PgClient, untouchable))

describe("PgWatchdog options", () => {
  it.effect("defaults are filled; durations are Duration.Inputs", () =>
    Effect.gen(function* () {
      expect(yield* PgWatchdog.decodeOptions()).toEqual({
        stuckAfter: Duration.seconds(30),
        deadInstanceAfter: Duration.seconds(30),
        limit: 100,
        interval: Duration.seconds(30)
      })
      expect((yield* PgWatchdog.decodeOptions({ interval: null, stuckAfter: "2 minutes" })).interval).toBeNull()
    })
  )

  it.effect("the layer refuses a bad option with a PostgresConfigError naming it, before touching the database", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [PgWatchdog.LayerOptions, string]> = [
        [{ interval: "0 millis" }, "interval"],
        [{ stuckAfter: -1 }, "stuckAfter"],
        [{ deadInstanceAfter: "Infinity" }, "deadInstanceAfter"],
        [{ limit: 0 }, "limit"],
        [{ limit: 2.5 }, "limit"]
      ]
      for (const [options, option] of cases) {
        const error = yield* Effect.flip(build(PgWatchdog.layer(options)))
        expect(error, JSON.stringify(options)).toMatchObject({ _tag: "PostgresConfigError", option })
        expect(error.message).toContain(option)
      }
    })
  )

  it.effect("the health check checks the watchdog options it diagnoses with, under its own name", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(build(PgHealth.layer({ watchdog: { limit: -1 } })))
      expect(error).toMatchObject({ _tag: "PostgresConfigError", option: "watchdog.limit" })
      const prefixed = yield* Effect.flip(PgHealth.decodeOptions({ watchdog: { stuckAfter: 0 } }, "health."))
      expect(prefixed).toMatchObject({ option: "health.watchdog.stuckAfter" })
      expect(prefixed.message).toMatch(/^health\.watchdog\.stuckAfter must be/)
    })
  )
})
