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
  PgTenants,
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
import { Duration, Effect, Layer, type Redacted } from "effect"
import * as Os from "node:os"
import * as TenantFleet from "./internal/tenantFleet.js"
import * as TenantFleetOptions from "./internal/tenantFleetOptions.js"
import * as Tenants from "./Tenants.js"

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
   * (`options.maxConcurrentDrainConsumers + 2` connections), so requests never queue it; the one LISTEN connection
   * (worker wake-ups and read-your-writes share it) is opened outside both pools.
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
  readonly watchdog?: PgWatchdog.LayerOptions
  /**
   * Extra event type -> perspective names to track for read-your-writes (codegen's `trackedEventTypes`);
   * the registered perspectives' own types are always tracked.
   */
  readonly trackedEventTypes?: TrackedEventTypeRegistry.Mappings
  /** Many tenants ({@link layerTenants}): the catalog's names and how the fleet holds tenants. */
  readonly tenants?: TenantsConfig
}

/**
 * Tenancy options (read by {@link layerTenants} only).
 *
 * @category models
 * @since 0.6.0
 */
export interface TenantsConfig extends PgTenants.Options {
  /** A tenant's services stop this long after their last request or work; default 30 seconds. */
  readonly idleTimeToLive?: Duration.Input | undefined
  /**
   * How often a tenant with work is checked for being idle again when its worker does not say so first; default 2
   * seconds.
   */
  readonly idleCheck?: Duration.Input | undefined
  /**
   * At most this many tenants' workers run in this process at once (default 32); tenants with work beyond that wait
   * their turn, first come first served, so a burst over a thousand tenants starts a bounded number of services.
   */
  readonly maxActive?: number | undefined
  /** A tenant with work hands its slot on after this long when others wait (default 5 seconds), then waits again. */
  readonly timeSlice?: Duration.Input | undefined
  /**
   * Apply only these tenants' work in this process; default all. Requests for any tenant are served (for a tenant
   * not served here, by its write side without a worker); `[]`: a process that only writes (its workers run in
   * other processes).
   */
  readonly serve?: ReadonlyArray<string> | undefined
  /**
   * Metrics stay bounded by default: `whizbang_tenants_active`, `whizbang_tenants_with_work` and
   * `whizbang_tenants_lag_seconds_max` (the worst tenant's lag). `true` adds `whizbang_tenant_lag_seconds` labelled
   * with each tenant that has work (one series per tenant: mind your metrics backend with many tenants).
   */
  readonly metricsPerTenant?: boolean | undefined
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
 * A configuration as {@link decode} leaves it: every option of every composed layer checked and decoded, once.
 * The layers are built from it without checking anything again.
 *
 * @category models
 * @since 0.5.0
 */
export interface Decoded {
  /** The configuration as given: the definitions, hooks and identity are taken from it. */
  readonly config: Config
  readonly client: PgClient.Decoded
  readonly pipeline: PgPerspectiveRewinder.DecodedPipeline
  readonly health: PgHealth.Decoded
  readonly watchdog: PgWatchdog.Decoded
  /** The catalog's and the fleet's options: always checked, used by `layerTenants`. */
  readonly tenants: { readonly catalog: PgTenants.Decoded; readonly fleet: TenantFleetOptions.Options }
}

const configError = (option: string, rule: string, value: unknown) =>
  new PostgresError.PostgresConfigError({ option, message: `${option} ${rule}, got ${JSON.stringify(value) ?? String(value)}` })

/** The application name shown in `pg_stat_activity`: the service name unless given. */
const applicationName = (config: Config): string => config.applicationName ?? config.serviceName ?? "whizbang"

/**
 * Checks and decodes every option of every layer `layer` composes, once, without connecting; each rule lives with
 * the layer that owns the option (`PgClient.decodeOptions`, `PgPerspectivePipeline.decode`, `PgHealth.decodeOptions`
 * ...). `layer`, `layerWithoutWorker` and `layerInfrastructure` run it first and build from its result, so a refused
 * start has not migrated anything and nothing is decoded twice.
 *
 * @category constructors
 * @since 0.5.0
 */
export const decode = (config: Config): Effect.Effect<Decoded, Errors> =>
  Effect.gen(function* () {
    const client = yield* PgClient.decodeOptions(
      {
        url: config.databaseUrl,
        schema: config.schema,
        maxConnections: config.maxConnections,
        applicationName: applicationName(config),
        preparedStatements: config.preparedStatements,
        jit: config.jit
      },
      "databaseUrl"
    )
    const { serviceName, instanceId } = config
    if (serviceName !== undefined && !(typeof serviceName === "string" && serviceName.trim().length > 0)) {
      return yield* configError("serviceName", "must be a non-empty string", serviceName)
    }
    if (instanceId !== undefined && !EventId.isUuid(instanceId)) return yield* configError("instanceId", "must be a UUID", instanceId)
    const pipeline = yield* PgPerspectiveRewinder.decodePipeline({
      ...config,
      ...(config.rewind ? { rewind: config.rewind } : {}),
      ...(config.rewindHooks ? { rewindHooks: config.rewindHooks } : {}),
      ...(config.streamLocks ? { lock: config.streamLocks } : {})
    })
    const health = yield* PgHealth.decodeOptions(config.health, "health.")
    const watchdog = yield* PgWatchdog.decodeOptions(config.watchdog, "watchdog.")
    yield* TrackedEventTypeRegistry.make(config.trackedEventTypes)
    const catalog = yield* PgTenants.decodeOptions(config.tenants, client.schema, "tenants.")
    const fleet = yield* TenantFleetOptions.decodeOptions(config.tenants, (id) => PgTenants.validateId(id, catalog.prefix))
    // The health check diagnoses with the watchdog's options when they are given.
    return {
      config,
      client,
      pipeline,
      health: config.watchdog ? { ...health, watchdog } : health,
      watchdog,
      tenants: { catalog, fleet }
    }
  })

/**
 * Checks every option of every layer `layer` composes, without connecting ({@link decode}).
 *
 * @category constructors
 * @since 0.1.0
 */
export const validate = (config: Config): Effect.Effect<void, Errors> => Effect.asVoid(decode(config))

const decoded = <A, E, R>(config: Config, build: (decoded: Decoded) => Layer.Layer<A, E, R>): Layer.Layer<A, E | Errors, R> =>
  Layer.unwrap(Effect.map(decode(config), build))

const identity = (config: Config) =>
  InstanceProvider.layer({
    instanceId: config.instanceId ?? EventId.unsafeMake(),
    serviceName: config.serviceName ?? "whizbang",
    hostName: Os.hostname(),
    processId: process.pid
  })

/**
 * The client of the service schema (its own), or of a tenant's: a schema-bound view of the process's one client,
 * whose schema exists already (a tenant's services never create it: a removed tenant stays removed).
 */
type ClientLayer = Layer.Layer<PgClient.PgClient>

const infrastructure = (d: Decoded, client?: ClientLayer) =>
  client === undefined
    ? Layer.mergeAll(SchemaReady.layer, identity(d.config)).pipe(Layer.provideMerge(PgClient.layerDecoded(d.client)))
    : Layer.mergeAll(SchemaReady.layerExisting, identity(d.config)).pipe(Layer.provideMerge(client))

/**
 * The service's infrastructure: client, migrations and identity (no worker).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerInfrastructure = (
  config: Config
): Layer.Layer<SchemaReady.SchemaReady | InstanceProvider.InstanceProvider | PgClient.PgClient, Errors> => decoded(config, infrastructure)

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

const operations = (d: Pick<Decoded, "health" | "watchdog">) =>
  Layer.merge(PgHealth.layerDecoded(d.health), PgWatchdog.layerDecoded(d.watchdog))

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
  Layer.unwrap(
    Effect.gen(function* () {
      const health = yield* PgHealth.decodeOptions(config.health, "health.")
      const watchdog = yield* PgWatchdog.decodeOptions(config.watchdog, "watchdog.")
      return operations({ health: config.watchdog ? { ...health, watchdog } : health, watchdog })
    })
  )

/**
 * A write-side process: infrastructure, the tracked event store and stores, stream locks, sync, health and
 * watchdog — no worker (it runs in other processes).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWithoutWorker = (config: Config): Layer.Layer<WriteServices, Errors> =>
  decoded(config, (d) => writeSide(config, d, PgPerspectivePipeline.layerPortsDecoded(d.pipeline.pipeline)))

/** The write side around `ports`: the tracked event store, stream locks, health and watchdog, sync, infrastructure. */
const writeSide = <E>(config: Config, d: Decoded, ports: Layer.Layer<PgPerspectivePipeline.Ports, E, PortsNeeds>, client?: ClientLayer) =>
  TrackedEventStore.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(ports, PgPerspectiveStreamLocker.layerDecoded(d.pipeline.lock), operations(d))),
    Layer.provideMerge(layerSync(config)),
    Layer.provideMerge(infrastructure(d, client))
  )

type PortsNeeds = PgClient.PgClient | SchemaReady.SchemaReady | InstanceProvider.InstanceProvider

/** The decoded pipeline with the worker's hooks replaced (the sync tracker's signals added). */
const withHooks = (
  pipeline: PgPerspectiveRewinder.DecodedPipeline,
  hooks: PerspectiveWorker.Hooks
): PgPerspectiveRewinder.DecodedPipeline => ({
  ...pipeline,
  pipeline: { ...pipeline.pipeline, worker: { ...pipeline.pipeline.worker, hooks } }
})

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
    : decoded(config, (d) => writeSide(config, d, PgPerspectivePipeline.layerBuildDecoded(d.pipeline.pipeline)))

/**
 * The whole service: infrastructure, the tracked event store, the perspective worker (signalling the sync
 * tracker after every commit) with its rewinder and stream locks, sync, health and watchdog. Every option is
 * checked once, before anything connects ({@link decode}), and the decoded parts are handed down.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (config: Config): Layer.Layer<Services, Errors> => decoded(config, (d) => service(d))

/**
 * The whole service of {@link layer} from a decoded configuration, on `client` (default: a client of its own).
 *
 * @internal
 */
export const service = (d: Decoded, client?: ClientLayer): Layer.Layer<Services, Errors> => {
  const pipeline = Layer.unwrap(
    Effect.map(WorkerSignals.hooks(d.config.hooks), (hooks) => PgPerspectiveRewinder.layerPipelineDecoded(withHooks(d.pipeline, hooks)))
  )
  return TrackedEventStore.layer.pipe(
    Layer.provideMerge(Layer.merge(pipeline, operations(d))),
    Layer.provideMerge(layerSync(d.config)),
    Layer.provideMerge(infrastructure(d, client))
  )
}

/**
 * The write side of {@link layerWithoutWorker} from a decoded configuration, on `client`.
 *
 * @internal
 */
export const writeService = (d: Decoded, client?: ClientLayer): Layer.Layer<WriteServices, Errors> =>
  writeSide(d.config, d, PgPerspectivePipeline.layerPortsDecoded(d.pipeline.pipeline), client)

/**
 * A tenant's services poll less than a single-tenant service's: a process may hold hundreds of tenants at once, and
 * each one's loops would otherwise poll every second. The fleet's notifications wake a tenant's worker, so its
 * safety-net poll while notifications are healthy defaults to 10 s, and the version build loop's round to 5 s. Its
 * worker says it is idle after one empty claim (`idleThresholdPolls` 1): the fleet's cue to let the tenant go, rather
 * than the next safety-net poll. It claims at most 50 streams at a time (`maxStreamsPerBatch`, 300 for one tenant):
 * every tenant of the process shares its event loop and worker pool, and a tenant replaying a backlog in cycles of
 * 300 streams held both long enough to multiply the others' lag (bench t, quiet tenants during a 100,000-event
 * replay: p50 319 -> 152 and 172 ms, p99 1,196 -> 573 and 456 ms with 50, two runs; the replaying tenant 5,064 ->
 * 3,861 and 4,729 events/s). A value given in the configuration wins.
 *
 * @internal
 */
export const tenantDefaults = (config: Config): Config => ({
  ...config,
  options: { notifyHealthyPollingInterval: Duration.seconds(10), idleThresholdPolls: 1, maxStreamsPerBatch: 50, ...config.options },
  versions: { interval: Duration.seconds(5), ...config.versions }
})

/**
 * `d` with `onIdle` run when the tenant's worker is idle (the fleet's cue to check the tenant): after the
 * configuration's own `onWorkProcessingIdle`, and after every poll that found nothing while the worker was idle
 * already. The second case is a worker that never found work: its services started for a tenant another process
 * drained meanwhile, whose worker never turns from active to idle — without it the fleet held that tenant until its
 * next `idleCheck` (2 s) for nothing (measured in bench t: every tenant's second hold, 2.0 s of a slot each).
 */
const withIdleHook = (d: Decoded, onIdle: Effect.Effect<void>): Decoded => {
  const hooks = d.config.hooks
  let active = false
  const then = (own: Effect.Effect<void> | undefined, next: Effect.Effect<void>) => (own === undefined ? next : Effect.andThen(own, next))
  return {
    ...d,
    config: {
      ...d.config,
      hooks: {
        ...hooks,
        onWorkProcessingStarted: () =>
          then(
            hooks?.onWorkProcessingStarted?.(),
            Effect.sync(() => {
              active = true
            })
          ),
        onWorkProcessingIdle: () =>
          then(
            hooks?.onWorkProcessingIdle?.(),
            Effect.suspend(() => {
              active = false
              return onIdle
            })
          ),
        onBatchCycleComplete: (summary) =>
          then(
            hooks?.onBatchCycleComplete?.(summary),
            Effect.suspend(() => (summary.streams === 0 && !active ? onIdle : Effect.void))
          )
      }
    }
  }
}

/**
 * Many tenants in one service ({@link Tenants}): the process's one client (of the service schema, which is the
 * tenant `default`), the tenant catalog (`<schema>_tenants.wh_tenants`, created when missing) and `Tenants`, whose
 * `run(tenantId, effect)` gives `effect` the services of {@link layer} bound to that tenant's schema. The worker
 * fleet serves every tenant with work (or `tenants.serve`) from this process: each tenant's worker runs as in
 * {@link layer}, all of them on one worker pool and one LISTEN connection. Every option is checked before anything
 * connects, `tenants.*` included; a tenant's services start on first use (its schema migrated then if needed).
 *
 * ```ts
 * const app = Whizbang.layerTenants({ databaseUrl, schema: "orders", events, perspectives, tenants: {} })
 * const program = Tenants.run("acme", placeOrder(order))   // the event store of tenant "acme"
 * ```
 *
 * @category layers
 * @since 0.6.0
 */
export const layerTenants = (config: Config): Layer.Layer<Tenants.Tenants | PgTenants.PgTenants | PgClient.PgClient, Errors> => {
  // One instance id for every tenant's services of this process.
  const instanceId = config.instanceId ?? EventId.unsafeMake()
  return decoded(tenantDefaults({ ...config, instanceId }), (d) =>
    Layer.effect(
      Tenants.Tenants,
      Effect.gen(function* () {
        const client = yield* PgClient.PgClient
        const catalog = yield* PgTenants.PgTenants
        const fleet = yield* TenantFleet.make(
          client,
          catalog,
          (view, served, onIdle) =>
            served
              ? service(withIdleHook(d, onIdle), Layer.succeed(PgClient.PgClient, view))
              : writeService(d, Layer.succeed(PgClient.PgClient, view)),
          d.tenants.fleet,
          {
            instanceId,
            staleSeconds: d.pipeline.pipeline.registry.abandonStaleInstanceThresholdSeconds,
            analyzeQueues: d.pipeline.pipeline.coordinator.queueVacuumEveryRows !== null
          }
        )
        return Tenants.Tenants.of(fleet)
      })
    ).pipe(
      Layer.provideMerge(PgTenants.layerDecoded(d.tenants.catalog)),
      // The service schema (the default tenant) is migrated, and created, at start as in `layer`; tenants' schemas
      // are created by adding them.
      Layer.provideMerge(SchemaReady.layer),
      Layer.provideMerge(PgClient.layerDecoded(d.client))
    )
  )
}
