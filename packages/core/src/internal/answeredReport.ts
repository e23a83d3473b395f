/**
 * A completion or failure report sent while the worker is being stopped (a deploy, a tenant let go) is waited for:
 * its statement may already have committed when the stop arrives, and only its answer says so. Interrupting the
 * wait would leave the commit without its hooks (`onPerspectiveEventProcessed`, which wakes read-your-writes
 * waiters and counts applied events) although the work rows are gone. So a stop lets an in-flight report answer for
 * up to {@link stopGrace}; a database that does not answer by then does not hold the stop (the report is
 * interrupted, its outcome unknown: the database re-delivers what did not commit, the fence and the dedup cache stop a
 * double apply).
 */
import { Cause, Duration, Effect, Exit, Fiber, Option } from "effect"

/** How long a stop waits for a report already on its way to answer. */
export const stopGrace = Duration.seconds(5)

/**
 * Runs `report` as its own fiber, joined with the caller's interruptibility (`restore`, from an `uninterruptibleMask`).
 * Interrupted while waiting, it waits on for the report's answer up to {@link stopGrace}: an answer returns as if no
 * stop had come (the caller, uninterruptible, goes on with what was committed), a failure fails, and no answer
 * interrupts the report and the caller.
 */
export const answered = <A, E>(
  report: Effect.Effect<A, E>,
  restore: <X, Y, R>(effect: Effect.Effect<X, Y, R>) => Effect.Effect<X, Y, R>
): Effect.Effect<A, E> =>
  Effect.gen(function* () {
    // The report itself stays interruptible, so an unanswered one can be let go.
    const fiber = yield* Effect.forkChild(Effect.interruptible(report), { startImmediately: true })
    const joined = yield* Effect.exit(restore(Fiber.join(fiber)))
    if (Exit.isSuccess(joined) || !Cause.hasInterruptsOnly(joined.cause)) return yield* joined
    const answer = yield* Effect.timeoutOption(Fiber.await(fiber), stopGrace)
    if (Option.isSome(answer)) return yield* answer.value
    yield* Fiber.interrupt(fiber)
    return yield* Effect.failCause(joined.cause)
  })
