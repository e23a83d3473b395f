/**
 * whizbang — the umbrella: `Whizbang.layer(config)` composes the whole product, and the building blocks are
 * re-exported so one import is enough.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Whizbang from "./Whizbang.js"
/** @since 0.1.0 */
export * from "@whizbang/core"
/** @since 0.1.0 */
export { PgClient, PgEventStore, PgMigrator, PgPerspectivePipeline, PgPerspectiveStore, SchemaReady } from "@whizbang/postgres"
/** @since 0.1.0 */
export { PerspectiveStreamLocker, PerspectiveStreamLockOptions, WithStreamLock } from "@whizbang/stream-locker"
/** @since 0.1.0 */
export { Dispatcher, EventCompletionAwaiter, PerspectiveSyncAwaiter, SyncAwareLens, SyncContext, SyncFilter, SyncResult } from "@whizbang/sync"
