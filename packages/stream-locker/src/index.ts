/**
 * @whizbang/stream-locker — stream-level locks on perspective cursors for rewinds, snapshot bootstraps and purges.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as PerspectiveStreamLocker from "./PerspectiveStreamLocker.js"
/** @since 0.1.0 */
export * as PerspectiveStreamLockOptions from "./PerspectiveStreamLockOptions.js"
/** @since 0.1.0 */
export * as PgPerspectiveStreamLocker from "./PgPerspectiveStreamLocker.js"
/** @since 0.1.0 */
export * as StreamLockError from "./StreamLockError.js"
/** @since 0.1.0 */
export * as WithStreamLock from "./withStreamLock.js"
/** @since 0.1.0 */
export * as PgPerspectiveRewinder from "./PgPerspectiveRewinder.js"
/** @since 0.1.0 */
export * as PerspectiveBootstrap from "./PerspectiveBootstrap.js"
/** @since 0.1.0 */
export * as PerspectivePurge from "./PerspectivePurge.js"
