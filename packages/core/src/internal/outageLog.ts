/**
 * How a background loop that retries on failure (the worker's claim loop, heartbeats, a listener's reconnects, the
 * watchdog, the version build loop) logs an outage: once, not once per attempt. A database that is away for 30
 * seconds made every loop log a warning with a full stack trace at each attempt (98 warnings, 877 lines for six
 * loops, `packages/whizbang/test/Outage.int.test.ts`); nothing said when it was back.
 *
 * With an `OutageLog` per loop:
 * - the first failure of a run is one warning: `<loop> failed: <the cause's message>; retrying quietly until it
 *   recovers` — the message only, no stack trace;
 * - every failure, the first included, is logged at debug level with its full cause (the stack trace is there);
 * - while the run lasts, a reminder warning every `remindEvery` (default 1 minute): `<loop> still failing after
 *   90 s (88 failed attempts): <message>`;
 * - the first success after a run is one info line: `<loop> recovered after 31 s (29 failed attempts)`.
 *
 * **When to use**: around each attempt of a loop that goes on after a failure (`guard`), or with `failed` and
 * `succeeded` where the attempt's outcome is known elsewhere (a listener is back once its LISTEN ran).
 *
 * **Gotchas**: one `OutageLog` per loop (its state is the loop's run of failures); loops that share one (the
 * worker's drain consumers) count their failures together. An interruption is not a failure: it is not logged.
 * Time comes from Effect's `Clock`.
 *
 * @since 0.3.0
 */
import { Cause, Clock, Duration, Effect } from "effect"

/**
 * The log of one loop's outages.
 *
 * @category models
 * @since 0.3.0
 */
export interface OutageLog {
  /** The loop, as its lines name it (`claiming work`, `LISTEN wh_work`). */
  readonly loop: string
  /** A failed attempt (see the module notes); an interruption is ignored. */
  readonly failed: (cause: Cause.Cause<unknown>) => Effect.Effect<void>
  /** A successful attempt: after a run of failures, one info line saying it recovered. */
  readonly succeeded: Effect.Effect<void>
  /**
   * Runs `attempt`; its success is reported as {@link OutageLog.succeeded}, its failure as {@link OutageLog.failed}
   * and replaced by `orElse` (an interruption is not caught).
   */
  readonly guard: <A, B, E, R>(attempt: Effect.Effect<A, E, R>, orElse: B) => Effect.Effect<A | B, never, R>
}

/**
 * Options of {@link make}.
 *
 * @category models
 * @since 0.3.0
 */
export interface Options {
  /** How often a run of failures is logged again as a warning, with how long it has lasted. Default 1 minute. */
  readonly remindEvery?: Duration.Input | undefined
}

/**
 * What a warning says of a cause: the first error's `message` (or the defect's, or its tag), never its stack trace.
 *
 * @category constructors
 * @since 0.3.0
 */
export const causeMessage = (cause: Cause.Cause<unknown>): string => {
  for (const reason of cause.reasons) {
    const value: unknown = reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : undefined
    if (value === undefined) continue
    if (typeof value === "object" && value !== null && typeof (value as { message?: unknown }).message === "string") {
      const { message } = value as { message: string }
      if (message.length > 0) return message
    }
    if (typeof value === "object" && value !== null && typeof (value as { _tag?: unknown })._tag === "string") {
      return (value as { _tag: string })._tag
    }
    return String(value)
  }
  return "unknown failure"
}

const seconds = (millis: number) => Math.round(millis / 1000)

/**
 * A new log for `loop`, with no failures yet.
 *
 * @category constructors
 * @since 0.3.0
 */
export const make = (loop: string, options: Options = {}): Effect.Effect<OutageLog> => Effect.sync(() => unsafeMake(loop, options))

/**
 * {@link make} outside an effect (a constructor that is not one).
 *
 * @category constructors
 * @since 0.3.0
 */
export const unsafeMake = (loop: string, options: Options = {}): OutageLog => {
  const remindMillis = Duration.toMillis(Duration.fromInputUnsafe(options.remindEvery ?? Duration.minutes(1)))
  // The current run of failures: when it began, how many, when it was last logged as a warning.
  let since: number | undefined
  let failures = 0
  let warnedAt = 0
  const failed = (cause: Cause.Cause<unknown>): Effect.Effect<void> =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.void
      : Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          failures++
          yield* Effect.logDebug(`${loop} failed (attempt ${failures} of this run)`, cause)
          if (since === undefined) {
            since = now
            warnedAt = now
            yield* Effect.logWarning(`${loop} failed: ${causeMessage(cause)}; retrying quietly until it recovers`)
          } else if (now - warnedAt >= remindMillis) {
            warnedAt = now
            yield* Effect.logWarning(
              `${loop} still failing after ${seconds(now - since)} s (${failures} failed attempts): ${causeMessage(cause)}`
            )
          }
        })
  const succeeded = Effect.suspend(() => {
    if (since === undefined) return Effect.void
    const from = since
    const count = failures
    since = undefined
    failures = 0
    return Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.logInfo(`${loop} recovered after ${seconds(now - from)} s (${count} failed attempt${count === 1 ? "" : "s"})`)
    )
  })
  return {
    loop,
    failed,
    succeeded,
    guard: (attempt, orElse) =>
      Effect.matchCauseEffect(attempt, {
        // An interruption is not a failure of the loop: it goes on interrupting.
        onFailure: (cause) => (Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.as(failed(cause), orElse)),
        onSuccess: (a) => Effect.as(succeeded, a)
      })
  }
}
