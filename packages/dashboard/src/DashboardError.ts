/**
 * The errors of starting the operations page, with a reason union: a bad option (named), or the address could not
 * be listened on (a port in use, a host not on this machine).
 *
 * @since 0.4.0
 */
import { Data } from "effect"

/**
 * An option is invalid; nothing was started.
 *
 * @category errors
 * @since 0.4.0
 */
export class InvalidOption extends Data.TaggedClass("InvalidOption")<{ readonly option: string }> {}

/**
 * The server could not listen on the address.
 *
 * @category errors
 * @since 0.4.0
 */
export class ListenFailed extends Data.TaggedClass("ListenFailed")<{ readonly host: string; readonly port: number }> {}

/**
 * @category errors
 * @since 0.4.0
 */
export type Reason = InvalidOption | ListenFailed

/**
 * @category errors
 * @since 0.4.0
 */
export class DashboardError extends Data.TaggedError("DashboardError")<{ readonly reason: Reason; readonly message: string }> {}

/**
 * @category constructors
 * @since 0.4.0
 */
export const invalidOption = (option: string, message: string): DashboardError =>
  new DashboardError({ reason: new InvalidOption({ option }), message })
