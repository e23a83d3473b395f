/**
 * The one error of the `whizbang` CLI and its operations, with a reason union. Every reason maps to a process
 * exit code, so scripts can tell bad input from a failed operation.
 *
 * | reason | exit code |
 * |---|---|
 * | `DatabaseFailure` (connection, SQL) | 1 |
 * | `InvalidInput` (also flag/argument parse errors, an invalid tenant id) | 2 |
 * | `NotFound` (also a perspective the service did not register, a tenant not in the catalog) | 3 |
 * | `Refused` (confirmation declined, no TTY without `--yes`, missing `--force`, a rebuild of a version not live or retiring, a version not ready to go live, a tenant id taken, the default tenant's removal) | 4 |
 * | `TimedOut` (a cutover or rollback did not finish in `--timeout`; nothing was switched) | 5 |
 *
 * @since 0.1.0
 */
import { Data } from "effect"

/**
 * @category errors
 * @since 0.1.0
 */
export class InvalidInput extends Data.TaggedClass("InvalidInput")<{ readonly option: string }> {}

/**
 * @category errors
 * @since 0.1.0
 */
export class NotFound extends Data.TaggedClass("NotFound")<{ readonly what: string; readonly id: string }> {}

/**
 * @category errors
 * @since 0.1.0
 */
export class Refused extends Data.TaggedClass("Refused")<{}> {}

/**
 * @category errors
 * @since 0.1.0
 */
export class DatabaseFailure extends Data.TaggedClass("DatabaseFailure")<{ readonly cause: unknown }> {}

/**
 * @category errors
 * @since 0.3.0
 */
export class TimedOut extends Data.TaggedClass("TimedOut")<{ readonly millis: number }> {}

/**
 * @category errors
 * @since 0.1.0
 */
export type Reason = InvalidInput | NotFound | Refused | DatabaseFailure | TimedOut

/**
 * @category errors
 * @since 0.1.0
 */
export class OperationError extends Data.TaggedError("OperationError")<{ readonly reason: Reason; readonly message: string }> {}

/**
 * The exit code of a reason.
 *
 * @category constants
 * @since 0.1.0
 */
export const exitCode = (reason: Reason): number => {
  switch (reason._tag) {
    case "DatabaseFailure":
      return 1
    case "InvalidInput":
      return 2
    case "NotFound":
      return 3
    case "Refused":
      return 4
    case "TimedOut":
      return 5
  }
}

/**
 * @category constructors
 * @since 0.1.0
 */
export const invalidInput = (option: string, message: string) => new OperationError({ reason: new InvalidInput({ option }), message })

/**
 * @category constructors
 * @since 0.1.0
 */
export const notFound = (what: string, id: string) =>
  new OperationError({ reason: new NotFound({ what, id }), message: `${what} ${id} not found` })

/**
 * @category constructors
 * @since 0.1.0
 */
export const refused = (message: string) => new OperationError({ reason: new Refused(), message })

/**
 * @category constructors
 * @since 0.1.0
 */
export const databaseFailure = (cause: { readonly message: string }) =>
  new OperationError({ reason: new DatabaseFailure({ cause }), message: `database: ${cause.message}` })
