/**
 * Everything in one layer — the analogue of the original's `AddWhizbang()`: the Postgres client of the service
 * schema, migrations (schema-ready gate), the instance identity, the event store, the perspective pipeline and
 * worker, and stream locks.
 *
 * ```ts
 * const app = Whizbang.layer({
 *   databaseUrl: process.env.DATABASE_URL!,
 *   schema: "orders",
 *   serviceName: "orders-api",
 *   events,                       // EventRegistry
 *   perspectives: [orderSummary], // Perspective definitions
 *   receptors: [sendConfirmation]
 * })
 * ```
 *
 * Every part stays usable on its own: `@whizbang/core` + `@whizbang/postgres` compose only what they need (see
 * `PgPerspectivePipeline`). This package holds no logic of its own.
 *
 * @since 0.1.0
 */
import {
  EventId,
  type EventStore,
  InstanceProvider,
  type LifecycleStore,
  type NotificationListener,
  type PerspectiveStore,
  type PerspectiveWorker,
  type WorkCoordinator
} from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, type PostgresError, SchemaReady } from "@whizbang/postgres"
import {
  type PerspectiveStreamLocker,
  type PerspectiveStreamLockOptions,
  PgPerspectiveStreamLocker,
  type StreamLockError
} from "@whizbang/stream-locker"
import {
  EventCompletionAwaiter,
  PerspectiveSyncAwaiter,
  PgSyncInquiry,
  SyncEventTracker,
  WorkerSignals
} from "@whizbang/sync"
import { Effect, Layer, type Redacted } from "effect"
import * as Os from "node:os"

/**
 * Configuration of a Whizbang service.
 *
 * @category models
 * @since 0.1.0
 */
export interface Config extends PgPerspectivePipeline.Config {
  readonly databaseUrl: string | Redacted.Redacted<string>
  /** The service's Postgres schema; default `whizbang`. */
  readonly schema?: string
  /** Name shown in `wh_service_instances` and logs; default `whizbang`. */
  readonly serviceName?: string
  /** This process's instance id (a UUID); default: a new one per process. */
  readonly instanceId?: string
  /** Pool size; default 10. */
  readonly maxConnections?: number
  readonly streamLocks?: PerspectiveStreamLockOptions.Input
}

/**
 * What a service built by {@link layerWithoutWorker} provides.
 *
 * @category models
 * @since 0.1.0
 */
export type WriteServices =
  | SchemaReady.SchemaReady
  | InstanceProvider.InstanceProvider
  | PgClient.PgClient
  | EventStore.EventStore
  | WorkCoordinator.WorkCoordinator
  | PerspectiveStore.PerspectiveStore
  | NotificationListener.NotificationListener
  | LifecycleStore.LifecycleStore
  | PerspectiveStreamLocker.PerspectiveStreamLocker
  | SyncEventTracker.SyncEventTracker
  | PgSyncInquiry.PgSyncInquiry
  | PerspectiveSyncAwaiter.PerspectiveSyncAwaiter
  | EventCompletionAwaiter.EventCompletionAwaiter

/**
 * Every start-up error: configuration, migration, wiring, duplicate instance.
 *
 * @category errors
 * @since 0.1.0
 */
export type Errors =
  | Layer.Error<ReturnType<typeof PgPerspectivePipeline.layer>>
  | PostgresError.PostgresError
  | PostgresError.MigrationError
  | PostgresError.PostgresConfigError
  | StreamLockError.InvalidStreamLockOptions

const identity = (config: Config) =>
  InstanceProvider.layer({
    instanceId: config.instanceId ?? EventId.unsafeMake(),
    serviceName: config.serviceName ?? "whizbang",
    hostName: Os.hostname(),
    processId: process.pid
  })

/**
 * The service's infrastructure: client, migrations and identity (no worker).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerInfrastructure = (
  config: Config
): Layer.Layer<
  SchemaReady.SchemaReady | InstanceProvider.InstanceProvider | PgClient.PgClient,
  PostgresError.PostgresError | PostgresError.MigrationError | PostgresError.PostgresConfigError
> =>
  Layer.mergeAll(SchemaReady.layer, identity(config)).pipe(
    Layer.provideMerge(PgClient.layer({ url: config.databaseUrl, schema: config.schema, maxConnections: config.maxConnections }))
  )

/**
 * Read-your-writes: the process tracker, the database inquiry (woken by NOTIFY, so waits resolve across
 * instances) and the awaiters.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSync = (config: Config) =>
  Layer.mergeAll(PerspectiveSyncAwaiter.layer, EventCompletionAwaiter.layer).pipe(
    Layer.provideMerge(PgSyncInquiry.layer({ perspectives: config.perspectives })),
    Layer.provideMerge(SyncEventTracker.layer)
  )

/**
 * A write-side process: infrastructure, event store and stores, stream locks, sync — no worker.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWithoutWorker = (config: Config): Layer.Layer<WriteServices, Errors> =>
  Layer.mergeAll(PgPerspectivePipeline.layerPorts(config), PgPerspectiveStreamLocker.layer(config.streamLocks), layerSync(config)).pipe(
    Layer.provideMerge(layerInfrastructure(config))
  )

/**
 * The whole service: infrastructure, event store, perspective worker (signalling the sync tracker after every
 * commit), stream locks and sync.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (config: Config): Layer.Layer<WriteServices | PerspectiveWorker.PerspectiveWorker, Errors> => {
  const pipeline = Layer.unwrap(Effect.map(WorkerSignals.hooks(config.hooks), (hooks) => PgPerspectivePipeline.layer({ ...config, hooks })))
  return Layer.mergeAll(pipeline, PgPerspectiveStreamLocker.layer(config.streamLocks)).pipe(
    Layer.provideMerge(layerSync(config)),
    Layer.provideMerge(layerInfrastructure(config))
  )
}
