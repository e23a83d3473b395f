/**
 * The Whizbang operations CLI, and the operations behind it as Effect functions for admin tools.
 *
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as Cli from "./Cli.js"

/**
 * @since 0.1.0
 */
export * as DeadLetters from "./DeadLetters.js"

/**
 * @since 0.1.0
 */
export * as FailedCursors from "./FailedCursors.js"

/**
 * @since 0.1.0
 */
export * as Locks from "./Locks.js"

/**
 * @since 0.1.0
 */
export * as OperationError from "./OperationError.js"

/**
 * @since 0.1.0
 */
export * as Rewind from "./Rewind.js"

/**
 * @since 0.3.0
 */
export * as Versions from "./Versions.js"

/**
 * @since 0.4.0
 */
export * as Work from "./Work.js"

/**
 * @since 0.6.0
 */
export * as Tenants from "./Tenants.js"
