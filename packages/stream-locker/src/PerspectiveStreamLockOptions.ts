/**
 * How long a stream lock lives and how often `withStreamLock` renews it.
 *
 * | option | default | rule |
 * |---|---|---|
 * | lockTimeout | 30 seconds | a finite, positive duration |
 * | keepAliveInterval | 10 seconds | a finite, positive duration, less than `lockTimeout / 2` |
 *
 * The `/ 2` rule leaves room for one missed renewal (a slow query, a GC pause) before the lock expires and
 * another instance may take it. Inputs are `Duration.Input`s: a number is milliseconds, `"5 seconds"` or a
 * `Duration` work too.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Option } from "effect"
import { InvalidStreamLockOptions } from "./StreamLockError.js"

/**
 * Validated options.
 *
 * @category models
 * @since 0.1.0
 */
export interface PerspectiveStreamLockOptions {
  readonly lockTimeout: Duration.Duration
  readonly keepAliveInterval: Duration.Duration
}

/**
 * Options as given by a caller; every field is optional.
 *
 * @category models
 * @since 0.1.0
 */
export interface Input {
  readonly lockTimeout?: Duration.Input | undefined
  readonly keepAliveInterval?: Duration.Input | undefined
}

/**
 * The defaults: `lockTimeout` 30 s, `keepAliveInterval` 10 s.
 *
 * @category constants
 * @since 0.1.0
 */
export const defaults: PerspectiveStreamLockOptions = {
  lockTimeout: Duration.seconds(30),
  keepAliveInterval: Duration.seconds(10)
}

const show = (input: unknown): string =>
  Duration.isDuration(input) ? Duration.format(input) : typeof input === "bigint" ? `${input}n` : (JSON.stringify(input) ?? String(input))

const positive = (
  option: InvalidStreamLockOptions["option"],
  input: Duration.Input | undefined,
  fallback: Duration.Duration
): Effect.Effect<Duration.Duration, InvalidStreamLockOptions> => {
  if (input === undefined) return Effect.succeed(fallback)
  const duration = Duration.fromInput(input)
  return Option.isSome(duration) && Duration.isFinite(duration.value) && Duration.isPositive(duration.value)
    ? Effect.succeed(duration.value)
    : Effect.fail(new InvalidStreamLockOptions({ option, rule: "must be a finite, positive duration", value: show(input) }))
}

/**
 * Fills the defaults and checks every rule, failing with the first broken one.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decode = (input: Input = {}): Effect.Effect<PerspectiveStreamLockOptions, InvalidStreamLockOptions> =>
  Effect.gen(function* () {
    const lockTimeout = yield* positive("lockTimeout", input.lockTimeout, defaults.lockTimeout)
    const keepAliveInterval = yield* positive("keepAliveInterval", input.keepAliveInterval, defaults.keepAliveInterval)
    if (!Duration.isLessThan(Duration.times(keepAliveInterval, 2), lockTimeout)) {
      return yield* Effect.fail(
        new InvalidStreamLockOptions({
          option: "keepAliveInterval",
          rule: `must be less than lockTimeout / 2 (lockTimeout is ${Duration.format(lockTimeout)})`,
          value: Duration.format(keepAliveInterval)
        })
      )
    }
    return { lockTimeout, keepAliveInterval }
  })
