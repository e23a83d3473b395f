import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as PgPerspectiveRewinder from "../src/PgPerspectiveRewinder.js"

describe("PgPerspectiveRewinder options", () => {
  it.effect("defaults are filled, once, into what the rewinder runs with", () =>
    Effect.gen(function* () {
      expect(yield* PgPerspectiveRewinder.decodeOptions()).toEqual({
        debounceWindow: Duration.seconds(5),
        debounceCap: Duration.seconds(30),
        startupScan: "blocking",
        snapshots: { every: 100, keep: 5 }
      })
    })
  )

  it.effect("each option is refused by its own rule, named after the prefix", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [PgPerspectiveRewinder.Options, string, string]> = [
        [{ debounceWindow: -5 }, "InvalidRebuildOptions", "rewind.debounceWindow"],
        [{ debounceCap: "0 millis" }, "InvalidRebuildOptions", "rewind.debounceCap"],
        [{ startupScan: "sometimes" as never }, "InvalidRebuildOptions", "rewind.startupScan"],
        [{ snapshots: { keep: 0 } }, "PostgresConfigError", "snapshots.keep"]
      ]
      for (const [options, tag, option] of cases) {
        const error = yield* Effect.flip(PgPerspectiveRewinder.decodeOptions(options, "rewind."))
        expect(error, JSON.stringify(options)).toMatchObject({ _tag: tag, option })
      }
    })
  )
})
