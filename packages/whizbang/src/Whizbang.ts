/**
 * Everything in one layer — the analogue of the original's `AddWhizbang()`: the Postgres client of the service
 * schema, migrations (schema-ready gate), the instance identity, the event store (its appends tracked for
 * read-your-writes), the perspective pipeline and worker with the rewinder (late arrivals), stream locks,
 * read-your-writes awaiters, and the health check and watchdog.
 *
 * Every option is validated before anything connects: a refused start leaves the database untouched.
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
  type DefinitionErrors,
  type EventStore,
  InstanceProvider,
  type LifecycleStore,
  type NotificationListener,
  type PerspectiveRewinder,
  type PerspectiveStore,
  type PerspectiveWorker,
  type WorkCoordinator,
  type WorkerOptions
} from "@whizbang/core"
import {
  PgClient,
  PgHealth,
  type PgInstanceRegistry,
  PgPerspectivePipeline,
  PgWatchdog,
  PostgresError,
  SchemaReady
} from "@whizbang/postgres"
import {
  type PerspectiveStreamLocker,
  type PerspectiveStreamLockOptions,
  PgPerspectiveRewinder,
  PgPerspectiveStreamLocker,
  type StreamLockError
} from "@whizbang/stream-locker"
import {
  EventCompletionAwaiter,
  PerspectiveSyncAwaiter,
  PgSyncInquiry,
  type SyncError,
  SyncEventTracker,
  TrackedEventStore,
  TrackedEventTypeRegistry,
  WorkerSignals
} from "@whizbang/sync"
import { type Duration, Effect, Layer, type Redacted } from "effect"
import * as Os from "node:os"
import { applicationName, validate as validateConfig } from "./internal/validateConfig.js"

/**
 * Configuration of a Whizbang service.
 *
 * @category models
 * @since 0.1.0
 */
export interface Config extends PgPerspectivePipeline.Config {
  /**
   * `postgres://user@host:port/database`; host and database must be in the URL (no fallback to `PGHOST` /
   * `PGDATABASE`). Missing (an unset environment variable) or malformed: the start fails with a
   * `PostgresConfigError` whose `option` is `databaseUrl`.
   */
  readonly databaseUrl: string | Redacted.Redacted<string> | undefined
  /** The service's Postgres schema; default `whizbang`. */
  readonly schema?: string
  /** Name shown in `wh_service_instances` and logs; default `whizbang`. */
  readonly serviceName?: string
  /** Shown in `pg_stat_activity.application_name`; default the service name. */
  readonly applicationName?: string
  /** This process's instance id (a UUID); default: a new one per process. */
  readonly instanceId?: string
  /**
   * Pool size for statements, an integer >= 1; default 10. The worker runs on a pool of its own
   * (`options.maxConcurrentDrainConsumers + 2` connections), so requests never queue it; the two LISTEN connections
   * (worker wake-ups, read-your-writes) are opened outside both pools.
   */
  readonly maxConnections?: number
  /**
   * Prepare the statements that run all the time (worker cycles, read-your-writes checks, appends) once per
   * connection; default `true`. Set `false` behind a pooler that cannot keep prepared statements (PgBouncer in
   * transaction mode before 1.21, or without `max_prepared_statements`).
   */
  readonly preparedStatements?: boolean
  /**
   * Let Postgres JIT-compile the service's statements; default `false` (off for its sessions): Whizbang's statements
   * are short, and compiling one cost far more than running it (see `PgClient`'s `jit`).
   */
  readonly jit?: boolean
  readonly streamLocks?: PerspectiveStreamLockOptions.Input
  /** Rewinds after late arrivals (debounce, start-up scan); snapshot options come from `snapshots`. */
  readonly rewind?: Omit<PgPerspectiveRewinder.Options, "snapshots">
  readonly rewindHooks?: PgPerspectiveRewinder.Hooks
  /** Options of `PgHealth` (the health check service). */
  readonly health?: PgHealth.Options
  /** Options of `PgWatchdog`; it diagnoses every `interval` (default 30 s; `null`: only on demand). */
  readonly watchdog?: PgWatchdog.Options & { readonly interval?: Duration.Input | null | undefined }
  /**
   * Extra event type -> perspective names to track for read-your-writes (codegen's `trackedEventTypes`);
   * the registered perspectives' own types are always tracked.
   */
  readonly trackedEventTypes?: TrackedEventTypeRegistry.Mappings
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
  | TrackedEventTypeRegistry.TrackedEventTypeRegistry
  | PgSyncInquiry.PgSyncInquiry
  | PerspectiveSyncAwaiter.PerspectiveSyncAwaiter
  | EventCompletionAwaiter.EventCompletionAwaiter
  | PgHealth.PgHealth
  | PgWatchdog.PgWatchdog

/**
 * What {@link layer} provides: the write side, the worker, its rewinder and the instance registry.
 *
 * @category models
 * @since 0.1.0
 */
export type Services =
  | WriteServices
  | PerspectiveWorker.PerspectiveWorker
  | PerspectiveRewinder.PerspectiveRewinder
  | PgPerspectiveRewinder.PgPerspectiveRewinder
  | PgInstanceRegistry.PgInstanceRegistry

/**
 * Every start-up error: configuration (refused before anything connects), migration, wiring, duplicate instance.
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
  | StreamLockError.InvalidRebuildOptions
  | SyncError.TrackedEventTypeRegistryError
  | WorkerOptions.InvalidWorkerOptions
  | PerspectiveWorker.WorkerConfigurationError
  | DefinitionErrors.InvalidPerspectiveName
  | DefinitionErrors.DuplicatePerspectiveName

/**
 * Checks every option of every layer `layer` composes, without connecting; `layer`, `layerWithoutWorker` and
 * `layerInfrastructure` run it first, so a refused start has not migrated anything.
 *
 * @category constructors
 * @since 0.1.0
 */
export const validate = (config: Config): Effect.Effect<void, Errors> => Effect.asVoid(validateConfig(config))

const validated = <A, E, R>(config: Config, build: () => Layer.Layer<A, E, R>): Layer.Layer<A, E | Errors, R> =>
  Layer.unwrap(Effect.as(validate(config), Layer.suspend(build)))

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
): Layer.Layer<SchemaReady.SchemaReady | InstanceProvider.InstanceProvider | PgClient.PgClient, Errors> =>
  validated(config, () =>
    Layer.mergeAll(SchemaReady.layer, identity(config)).pipe(
      Layer.provideMerge(
        PgClient.layer({
          // validate() refused a missing URL already
          url: config.databaseUrl as string | Redacted.Redacted<string>,
          schema: config.schema,
          maxConnections: config.maxConnections,
          applicationName: applicationName(config),
          preparedStatements: config.preparedStatements,
          jit: config.jit
        })
      )
    )
  )

/**
 * Read-your-writes: the process tracker, the tracked-type registry (every type a registered perspective handles,
 * plus `trackedEventTypes`), the database inquiry (woken by NOTIFY, so waits resolve across instances) and the
 * awaiters.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSync = (config: Config) =>
  Layer.mergeAll(PerspectiveSyncAwaiter.layer, EventCompletionAwaiter.layer).pipe(
    Layer.provideMerge(PgSyncInquiry.layer({ perspectives: config.perspectives })),
    Layer.provideMerge(Layer.merge(SyncEventTracker.layer, trackedTypes(config)))
  )

const trackedTypes = (config: Config) =>
  Layer.effect(
    TrackedEventTypeRegistry.TrackedEventTypeRegistry,
    Effect.gen(function* () {
      const registry = yield* TrackedEventTypeRegistry.make(config.trackedEventTypes)
      for (const p of config.perspectives) for (const type of p.eventTypes) yield* registry.register(type, p.name)
      return registry
    })
  )

/**
 * The health check (`PgHealth`) and the watchdog (`PgWatchdog`, diagnosing in the background unless
 * `watchdog.interval` is `null`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerOperations = (
  config: Config
): Layer.Layer<PgHealth.PgHealth | PgWatchdog.PgWatchdog, PostgresError.PostgresConfigError, PgClient.PgClient> =>
  Layer.merge(
    PgHealth.layer({ ...config.health, ...(config.watchdog ? { watchdog: config.watchdog } : {}) }),
    PgWatchdog.layer(config.watchdog)
  )

/**
 * A write-side process: infrastructure, the tracked event store and stores, stream locks, sync, health and
 * watchdog — no worker (it runs in other processes).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWithoutWorker = (config: Config): Layer.Layer<WriteServices, Errors> =>
  validated(config, () =>
    TrackedEventStore.layer.pipe(
      Layer.provideMerge(
        Layer.mergeAll(
          PgPerspectivePipeline.layerPorts(config),
          PgPerspectiveStreamLocker.layer(config.streamLocks),
          layerOperations(config)
        )
      ),
      Layer.provideMerge(layerSync(config)),
      Layer.provideMerge(layerInfrastructure(config))
    )
  )

/**
 * A builder: an instance started to replay perspective history (new versions, `whizbang rebuild`, a new
 * perspective's catch-up) — the write side of {@link layerWithoutWorker}, plus the version build loop and the replay
 * of history of the versions `config.perspectives` declares (`PgHistoryReplay`). It runs no perspective worker, so it
 * applies no live work: start the serving instances with `versions: { replay: "off" }` and one or more builders on
 * other machines, and the serving instances only serve. A stream whose history cannot be replayed (a failing event)
 * becomes work rows that an instance with a worker running that version applies. `versions.replay: "off"` is refused
 * (`PostgresConfigError` naming it) before anything connects.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerBuilder = (config: Config): Layer.Layer<WriteServices, Errors> =>
  config.versions?.replay === "off"
    ? Layer.unwrap(
        Effect.fail(
          new PostgresError.PostgresConfigError({
            option: "versions.replay",
            message: 'versions.replay is "off": a builder replays history, so it cannot be off there (leave it out, or "auto")'
          })
        )
      )
    : validated(config, () =>
        TrackedEventStore.layer.pipe(
          Layer.provideMerge(
            Layer.mergeAll(
              PgPerspectivePipeline.layerBuild(config),
              PgPerspectiveStreamLocker.layer(config.streamLocks),
              layerOperations(config)
            )
          ),
          Layer.provideMerge(layerSync(config)),
          Layer.provideMerge(layerInfrastructure(config))
        )
      )

/**
 * The whole service: infrastructure, the tracked event store, the perspective worker (signalling the sync
 * tracker after every commit) with its rewinder and stream locks, sync, health and watchdog.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (config: Config): Layer.Layer<Services, Errors> =>
  validated(config, () => {
    const pipeline = Layer.unwrap(
      Effect.map(WorkerSignals.hooks(config.hooks), (hooks) =>
        PgPerspectiveRewinder.layerPipeline({
          ...config,
          hooks,
          ...(config.rewind ? { rewind: config.rewind } : {}),
          ...(config.rewindHooks ? { rewindHooks: config.rewindHooks } : {}),
          ...(config.streamLocks ? { lock: config.streamLocks } : {})
        })
      )
    )
    return TrackedEventStore.layer.pipe(
      Layer.provideMerge(Layer.merge(pipeline, layerOperations(config))),
      Layer.provideMerge(layerSync(config)),
      Layer.provideMerge(layerInfrastructure(config))
    )
  })
