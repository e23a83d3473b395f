/**
 * A coordinator statement's `PostgresError` as the `WorkCoordinatorError` of the operation that ran it.
 *
 * @internal
 */
import { WorkCoordinator } from "@whizbang/core"
import type { PostgresError } from "../PostgresError.js"

/** The error mapper of `operation` (one per operation, made once). */
export const coordinatorError = (operation: string) => (cause: PostgresError) =>
  new WorkCoordinator.WorkCoordinatorError({ operation, reason: cause.reason, detail: cause.message, cause })
