/**
 * Timeouts that do not count time the process spent frozen — at a debugger breakpoint, under `SIGSTOP`, or in
 * a suspended VM — so stepping through a handler does not turn every sync wait into a false timeout.
 *
 * How: instead of one timer for the whole timeout, a budget fiber sleeps in short ticks (default 100 ms) and
 * adds up the time each tick took on the `Clock`. A frozen process cannot run its timers, so the tick that
 * spans the freeze observes a wall-clock jump far longer than itself; a tick longer than `tick + freezeThreshold`
 * (default 1 s) counts only as `tick`. Ordinary timer lag below the threshold counts in full. The original
 * sampled CPU time for the same purpose; the jump check needs no platform API and runs under `TestClock`.
 *
 * **Gotchas**: a single pause shorter than the threshold (a long GC, a brief stop) still counts; a debugger
 * session that keeps the event loop running (e.g. evaluating in the console) is not a freeze.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Option } from "effect"

/**
 * Tuning of the freeze detection.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** false: a plain timeout. Default true. */
  readonly debuggerAware?: boolean | undefined
  /** Length of one measuring tick. Default 100 ms. */
  readonly tick?: Duration.Input | undefined
  /** A tick longer than `tick + freezeThreshold` is treated as a freeze. Default 1 s. */
  readonly freezeThreshold?: Duration.Input | undefined
}

/**
 * Sleeps until `duration` of active (not frozen) time has passed. An infinite duration never ends.
 *
 * @category timing
 * @since 0.1.0
 */
export const sleep = (duration: Duration.Input, options?: Options): Effect.Effect<void> =>
  Effect.gen(function* () {
    const total = Duration.toMillis(duration)
    if (options?.debuggerAware === false) return yield* Effect.sleep(total)
    if (!Number.isFinite(total)) return yield* Effect.never
    const tick = Duration.toMillis(options?.tick ?? 100)
    const threshold = Duration.toMillis(options?.freezeThreshold ?? 1000)
    let active = 0
    while (active < total) {
      const step = Math.min(tick, total - active)
      const before = yield* Clock.currentTimeMillis
      yield* Effect.sleep(step)
      const observed = (yield* Clock.currentTimeMillis) - before
      active += observed > step + threshold ? step : Math.max(observed, step)
    }
  })

/**
 * Runs `self` with a time limit measured by {@link sleep}: `Some` of its value, or `None` when the limit passed
 * first (then `self` is interrupted). A failure of `self` is kept.
 *
 * @category timing
 * @since 0.1.0
 */
export const timeoutOption = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  duration: Duration.Input,
  options?: Options
): Effect.Effect<Option.Option<A>, E, R> => {
  const millis = Duration.toMillis(duration)
  if (!Number.isFinite(millis)) return Effect.asSome(self)
  if (options?.debuggerAware === false) return Effect.timeoutOption(self, millis)
  return Effect.raceFirst(Effect.asSome(self), Effect.as(sleep(millis, options), Option.none()))
}
