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
export {
  PgClient,
  PgEventStore,
  PgHealth,
  PgMigrator,
  PgPerspectivePipeline,
  PgPerspectiveStore,
  PgStatus,
  PgWatchdog,
  PostgresError,
  SchemaReady
} from "@whizbang/postgres"
/** @since 0.1.0 */
export {
  PerspectiveBootstrap,
  PerspectivePurge,
  PerspectiveStreamLocker,
  PerspectiveStreamLockOptions,
  PgPerspectiveRewinder,
  StreamLockError,
  WithStreamLock
} from "@whizbang/stream-locker"
/** @since 0.1.0 */
export {
  Dispatcher,
  EventCompletionAwaiter,
  PerspectiveSyncAwaiter,
  SyncAwareLens,
  SyncContext,
  SyncError,
  SyncEventTracker,
  SyncFilter,
  SyncResult,
  TrackedEventStore,
  TrackedEventTypeRegistry,
  WorkerSignals
} from "@whizbang/sync"
