/**
 * A cutover's options checked and defaulted into the hand-over's settings. Apart because the operator's cutover and
 * rollback, the build loop's automatic and resumed hand-overs, and the start-up check of `versions.cutover` all
 * decode them the same way, and the listing's `caughtUp` uses the same default `maxLag` a cutover starts with.
 *
 * @internal
 */
import { Duration, Effect } from "effect"
import type { CutoverOptions } from "../../PgPerspectiveVersions.js"
import { PostgresConfigError } from "../../PostgresError.js"
import * as DurationOptions from "../durationOption.js"
import type * as HandOver from "../handOver.js"

/** At most this many pending events to start a hand-over, unless `CutoverOptions.maxLag` says otherwise. */
export const defaultMaxLag = 1_000

/** `value` is absent or a positive integer; else a `PostgresConfigError` naming `option`. */
export const positiveInt = (option: string, value: unknown): Effect.Effect<void, PostgresConfigError> =>
  value === undefined || (typeof value === "number" && Number.isInteger(value) && value > 0)
    ? Effect.void
    : Effect.fail(new PostgresConfigError({ option, message: `${option} must be a positive integer, got ${String(value)}` }))

/** {@link CutoverOptions} checked (a bad value is a `PostgresConfigError` naming it, under `prefix`) and defaulted. */
export const decodeCutover = (options: CutoverOptions | undefined, prefix = ""): Effect.Effect<HandOver.Settings, PostgresConfigError> =>
  Effect.gen(function* () {
    yield* positiveInt(`${prefix}maxLag`, options?.maxLag)
    return {
      maxLag: options?.maxLag ?? defaultMaxLag,
      timeoutMillis: Duration.toMillis(
        yield* DurationOptions.decode(`${prefix}timeout`, options?.timeout, "positive", Duration.seconds(30))
      ),
      graceSeconds: Duration.toSeconds(
        yield* DurationOptions.decode(`${prefix}grace`, options?.grace, "nonNegative", Duration.minutes(10))
      ),
      leaseSeconds: Duration.toSeconds(yield* DurationOptions.decode(`${prefix}lease`, options?.lease, "positive", Duration.seconds(10)))
    }
  })
