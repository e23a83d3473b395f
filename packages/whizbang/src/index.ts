/**
 * whizbang — the umbrella: `Whizbang.layer(config)` composes the whole product, and the building blocks are
 * re-exported, each by its module name (`Perspective.make`, `PerspectiveStore.getById`), so one import is enough.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Whizbang from "./Whizbang.js"

/**
 * @since 0.6.0
 */
export * as Tenants from "./Tenants.js"
/**
 * The modules an application uses. The worker's machinery (work coordinator, batchers, completion strategies,
 * dedup cache, runners) stays in `@whizbang/core` for those who compose their own pipeline.
 *
 * @since 0.1.0
 */
export {
  AppendRequest,
  DefinitionErrors,
  Envelope,
  EventDefinition,
  EventId,
  EventRegistry,
  EventStore,
  EventStoreError,
  InstanceProvider,
  LifecycleStage,
  MemoryPipeline,
  Perspective,
  PerspectiveRegistry,
  PerspectiveRewinder,
  PerspectiveStore,
  PerspectiveWorker,
  Receptor,
  SecurityContext,
  StorageReason,
  WorkerOptions
} from "@whizbang/core"
/** @since 0.1.0 */
export {
  PgClient,
  PgEventStore,
  PgHealth,
  PgHistoryReplay,
  PgMigrator,
  PgPerspectivePipeline,
  PgPerspectiveStore,
  PgPerspectiveVersions,
  PgStatus,
  PgTenants,
  PgWatchdog,
  PostgresError,
  SchemaReady,
  Telemetry,
  TenantError,
  VersionError
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
  ScopedEventTracker,
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
