/**
 * The whole perspective pipeline on Postgres in one layer: the event store (writing work rows for every
 * perspective that handles an event's type), the work coordinator, the perspective store, the NOTIFY listener
 * and the perspective worker. Needs a `PgClient`, `SchemaReady`, an `InstanceProvider` and a `PerspectiveRewinder`
 * (`PgPerspectiveRewinder.layerPipeline` in `@whizbang/stream-locker` provides the rewinder and its stream locks;
 * `Whizbang.layer` composes everything).
 *
 * ```ts
 * const app = PgPerspectivePipeline.layer({ events, perspectives }).pipe(
 *   Layer.provideMerge(PerspectiveRewinder.layerUnsupported), // no late arrivals expected; else PgPerspectiveRewinder
 *   Layer.provideMerge(SchemaReady.layer),
 *   Layer.provideMerge(PgClient.layer({ url, schema: "orders" })),
 *   Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "orders" }))
 * )
 * ```
 *
 * @since 0.1.0
 */
import {
  type DefinitionErrors,
  type EventRegistry,
  type EventStore,
  type InstanceProvider,
  LifecycleStage,
  type NotificationListener,
  type Perspective,
  type PerspectiveRewinder,
  type PerspectiveStore,
  type LifecycleStore,
  type Receptor,
  PerspectiveWorker,
  type WorkCoordinator,
  WorkerOptions
} from "@whizbang/core"
import { PerspectiveFingerprint } from "@whizbang/core/internal"
import { type Duration, Effect, Layer } from "effect"
import { PgClient, type Shape as PgClientShape } from "./PgClient.js"
import { type DuplicateInstanceError, PostgresConfigError, type PostgresError } from "./PostgresError.js"
import type { SchemaReady } from "./SchemaReady.js"
import * as PgEventStore from "./PgEventStore.js"
import * as PgHistoryReplay from "./PgHistoryReplay.js"
import * as PgInstanceRegistry from "./PgInstanceRegistry.js"
import * as PgLifecycleStore from "./PgLifecycleStore.js"
import * as PgNotificationListener from "./PgNotificationListener.js"
import type * as PgPerspectiveSnapshots from "./PgPerspectiveSnapshots.js"
import type * as PgQueueVacuum from "./PgQueueVacuum.js"
import * as PgPerspectiveStore from "./PgPerspectiveStore.js"
import * as PgPerspectiveVersions from "./PgPerspectiveVersions.js"
import type { VersionTableConflict } from "./VersionError.js"
import * as PgWorkCoordinator from "./PgWorkCoordinator.js"
import * as CoordinatorOptions from "./internal/coordinatorOptions.js"
import * as SchemaPlacement from "./sql/schemaPlacement.js"

/**
 * @category models
 * @since 0.1.0
 */
export interface Config extends Omit<PerspectiveWorker.Config, "events"> {
  readonly events: EventRegistry.EventRegistry
  readonly perspectives: ReadonlyArray<Perspective.Any>
  /** Backoff of a failed apply before it is retried (see `PgWorkCoordinator.Options`). */
  readonly failureBackoff?: PgWorkCoordinator.Options["failureBackoff"]
  /**
   * Claims of other instances' partitions open up after this (see `PgWorkCoordinator.Options`): a `Duration.Input`,
   * finite and >= 0. Default 3 seconds.
   */
  readonly affinityGrace?: Duration.Input | undefined
  /**
   * Vacuum of the queue tables by the worker, after every N work rows it removed (default
   * `{ everyRows: 100_000 }`), or `false` (left to autovacuum). See `PgQueueVacuum`.
   */
  readonly queueVacuum?: PgQueueVacuum.Input
  /** Instance registry options; the threshold comes from `options.abandonStaleInstanceThreshold`. */
  readonly registry?: Omit<PgInstanceRegistry.Options, "abandonStaleInstanceThreshold">
  /**
   * Snapshots written in the completion transaction: every N applied events per (stream, perspective), newest M
   * kept (defaults 100 and 5; see `PgPerspectiveSnapshots`). Positive integers; anything else fails the layer with a
   * `PostgresConfigError` naming the option.
   */
  readonly snapshots?: PgPerspectiveSnapshots.Input
  /**
   * Perspective versions (see `PgPerspectiveVersions`): the build loop's interval (`null`: off, the replay of
   * history too), automatic cutover to the newest declared version (default on), the hand-over's options, and the
   * replay of history (`PgHistoryReplay`: `replay` `"auto"` or `"off"`, its concurrency, chunk size and live-lag
   * target).
   */
  readonly versions?: PgPerspectiveVersions.Options | undefined
}

/**
 * The routing of event types to perspective names, for work rows.
 *
 * @category constructors
 * @since 0.1.0
 */
export const routing = (perspectives: ReadonlyArray<Perspective.Any>) => {
  const routes = new Map<string, Array<string>>()
  for (const p of perspectives) for (const type of p.eventTypes) routes.set(type, [...(routes.get(type) ?? []), p.name])
  return (eventType: string): ReadonlyArray<string> => routes.get(eventType) ?? []
}

/**
 * The event types whose lifecycle must be tracked durably: those handled by end-of-processing receptors.
 *
 * @category constructors
 * @since 0.1.0
 */
export const lifecycleTypes = (receptors: ReadonlyArray<Receptor.Receptor>) => {
  const types = new Set(
    receptors.filter((r) => r.stage !== undefined && LifecycleStage.completionStages.includes(r.stage)).flatMap((r) => r.handles)
  )
  return (eventType: string): boolean => types.has(eventType)
}

/**
 * The services of {@link layerPorts}.
 *
 * @category models
 * @since 0.1.0
 */
export type Ports =
  | EventStore.EventStore
  | WorkCoordinator.WorkCoordinator
  | PerspectiveStore.PerspectiveStore
  | NotificationListener.NotificationListener
  | LifecycleStore.LifecycleStore

/**
 * The layer of the ports, as {@link layerPorts} builds it.
 *
 * @category models
 * @since 0.3.0
 */
export type PortsLayer = Layer.Layer<
  Ports,
  | WorkerOptions.InvalidWorkerOptions
  | DefinitionErrors.InvalidPerspectiveName
  | EventRegistry.InvalidEventDefinition
  | PostgresError
  | PostgresConfigError
  | VersionTableConflict,
  PgClient | SchemaReady | InstanceProvider.InstanceProvider
>

/**
 * What {@link layerPortsDecoded} needs, as {@link decodePorts} leaves it: the definitions, the worker's options
 * decoded and the coordinator's own options (`failureBackoff`, `affinityGrace`, `snapshots`, `queueVacuum`) decoded.
 *
 * @category models
 * @since 0.5.0
 */
export interface DecodedPorts {
  readonly events: EventRegistry.EventRegistry
  readonly perspectives: ReadonlyArray<Perspective.Any>
  readonly receptors?: ReadonlyArray<Receptor.Receptor> | undefined
  readonly options: WorkerOptions.WorkerOptions
  readonly coordinator: PgWorkCoordinator.Decoded
}

/**
 * The whole configuration as {@link decode} leaves it: checked once, every part decoded.
 *
 * @category models
 * @since 0.5.0
 */
export interface Decoded extends DecodedPorts {
  readonly worker: PerspectiveWorker.Decoded
  readonly registry: PgInstanceRegistry.Decoded
  readonly versions: PgPerspectiveVersions.DecodedOptions
}

/**
 * What {@link decode} refuses.
 *
 * @category errors
 * @since 0.5.0
 */
export type DecodeError = PerspectiveWorker.DecodeError | PostgresConfigError

const decodeCoordinator = (config: Config, options: WorkerOptions.WorkerOptions) =>
  Effect.map(CoordinatorOptions.decodeOwn(config), (own) => CoordinatorOptions.combine(options, own))

/**
 * Checks the options {@link layerPorts} uses (the worker's options and the coordinator's), once.
 *
 * @category constructors
 * @since 0.5.0
 */
export const decodePorts = (config: Config): Effect.Effect<DecodedPorts, WorkerOptions.InvalidWorkerOptions | PostgresConfigError> =>
  Effect.gen(function* () {
    const options = yield* WorkerOptions.decode(config.options ?? {})
    const coordinator = yield* decodeCoordinator(config, options)
    return { events: config.events, perspectives: config.perspectives, receptors: config.receptors, options, coordinator }
  })

/**
 * Checks the whole configuration once, without connecting: the worker's (`PerspectiveWorker.decode`: options,
 * definitions, wiring), the coordinator's, the instance registry's (`registry.*`) and the versions' options.
 * {@link layer} runs it; `Whizbang.layer` runs it before anything connects and hands the result to {@link layerDecoded}.
 *
 * @category constructors
 * @since 0.5.0
 */
export const decode = (config: Config): Effect.Effect<Decoded, DecodeError> =>
  Effect.gen(function* () {
    const worker = yield* PerspectiveWorker.decode(config)
    const coordinator = yield* decodeCoordinator(config, worker.options)
    const registry = yield* PgInstanceRegistry.decodeOptions(
      {
        perspectiveNames: config.perspectives.map((p) => p.name),
        ...config.registry,
        abandonStaleInstanceThreshold: worker.options.abandonStaleInstanceThreshold
      },
      "registry."
    )
    const versions = yield* PgPerspectiveVersions.decodeOptions(config.versions)
    return {
      events: config.events,
      perspectives: config.perspectives,
      receptors: config.receptors,
      options: worker.options,
      coordinator,
      worker,
      registry,
      versions
    }
  })

/**
 * Everything but the worker: for processes that only append and read (the worker runs elsewhere).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerPorts = (config: Config): PortsLayer => Layer.unwrap(Effect.map(decodePorts(config), layerPortsDecoded))

/**
 * {@link layerPorts} for a configuration {@link decodePorts} (or {@link decode}) checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerPortsDecoded = (config: DecodedPorts): PortsLayer => ports(config, false)

/**
 * Whether the database behind a pool has Citus, asked once per pool: a property of the database, and every start of
 * a tenant's services (each on a view of the process's one pool) builds a worker pool and asked it again.
 */
const citusOfPool = new WeakMap<object, boolean>()
const hasCitus = (client: PgClientShape) => {
  const known = citusOfPool.get(client.pool)
  return known !== undefined
    ? Effect.succeed(known)
    : Effect.map(SchemaPlacement.citus(client), ({ citus }) => {
        citusOfPool.set(client.pool, citus)
        return citus
      })
}

/**
 * `layer` on a pool of its own of `connections` (`PgClient.dedicated`, with generic plans but on Citus: the
 * coordinator's statements are all Whizbang's own, of fixed shape); undefined: on the service's pool.
 */
const ownPool = <A, E, R>(layer: Layer.Layer<A, E, R>, connections: number | undefined) =>
  connections === undefined
    ? layer
    : layer.pipe(
        Layer.provide(
          Layer.effect(
            PgClient,
            Effect.flatMap(PgClient, (shared) =>
              // Not on Citus: its coordinator refuses to plan the claim generically ("could not create distributed plan").
              Effect.flatMap(hasCitus(shared), (citus) => shared.dedicated({ maxConnections: connections, genericPlans: !citus }))
            )
          )
        )
      )

/**
 * The ports; `workerPool`: the coordinator runs on a pool of its own of `maxConcurrentDrainConsumers + 2`
 * connections (each consumer's fetch or completion, plus the claim loop and a lease renewal), so the worker never
 * waits for a connection behind the service's requests.
 */
const ports = (config: DecodedPorts, workerPool: boolean): PortsLayer =>
  Layer.mergeAll(
    ownPool(PgWorkCoordinator.layerDecoded(config.coordinator), workerPool ? config.options.maxConcurrentDrainConsumers + 2 : undefined),
    // Registration lays out the perspectives' tables (the store's own check would read the layout a second time).
    PgPerspectiveStore.layerRegistered(config.perspectives.map((p) => p.name)).pipe(
      Layer.provideMerge(
        PgPerspectiveVersions.layerRegistration(
          config.perspectives.map((p) => ({
            name: p.name,
            baseName: p.baseName,
            version: p.version,
            eventTypes: p.eventTypes,
            fingerprint: PerspectiveFingerprint.of(p)
          }))
        )
      )
    ),
    PgNotificationListener.layer,
    PgLifecycleStore.layer,
    PgEventStore.layer({
      registry: config.events,
      routing: routing(config.perspectives),
      partitionCount: config.options.partitionCount,
      lifecycleTypes: lifecycleTypes(config.receptors ?? [])
    })
  )

/**
 * The version build loop and the replay of history of the versions `config` declares (both off when
 * `versions.interval` is `null`).
 */
const versionsBuild = (config: Decoded) =>
  Layer.merge(
    PgPerspectiveVersions.layerBuilderDecoded(config.perspectives, config.versions, config.options.partitionCount),
    config.versions.interval === null
      ? Layer.empty
      : PgHistoryReplay.layer({
          perspectives: config.perspectives,
          events: config.events,
          partitionCount: config.options.partitionCount,
          options: config.versions.replay,
          interval: config.versions.interval
        })
  )

/**
 * The layer of a builder ({@link layerBuild}): the ports, refused on a bad configuration.
 *
 * @category models
 * @since 0.5.0
 */
export type BuildLayer = Layer.Layer<
  Ports,
  DecodeError | DefinitionErrors.InvalidPerspectiveName | EventRegistry.InvalidEventDefinition | PostgresError | VersionTableConflict,
  PgClient | SchemaReady | InstanceProvider.InstanceProvider
>

/**
 * A builder: the ports, the version build loop and the replay of history of the versions `config` declares — no
 * perspective worker, so it applies no live work (nor the work-row path of a stream whose history failed to replay:
 * an instance with a worker that runs the version does). For replaying history on machines of its own while the
 * serving instances (`versions.replay: "off"`) only serve. `versions.replay: "off"` is refused here.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerBuild = (config: Config): BuildLayer =>
  Layer.unwrap(
    Effect.gen(function* () {
      if (config.versions?.replay === "off") {
        return yield* new PostgresConfigError({
          option: "versions.replay",
          message: 'versions.replay is "off": a builder replays history, so it cannot be off here (leave it out, or "auto")'
        })
      }
      return layerBuildDecoded(yield* decode(config))
    })
  )

/**
 * {@link layerBuild} for a configuration {@link decode} checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerBuildDecoded = (config: Decoded): BuildLayer => versionsBuild(config).pipe(Layer.provideMerge(ports(config, false)))

/**
 * The services and errors of {@link layer}.
 *
 * @category models
 * @since 0.5.0
 */
export type PipelineLayer = Layer.Layer<
  Ports | PerspectiveWorker.PerspectiveWorker | PgInstanceRegistry.PgInstanceRegistry,
  | WorkerOptions.InvalidWorkerOptions
  | DefinitionErrors.PerspectiveDefinitionError
  | EventRegistry.InvalidEventDefinition
  | Receptor.InvalidReceptor
  | PerspectiveWorker.WorkerConfigurationError
  | DuplicateInstanceError
  | PostgresError
  | PostgresConfigError
  | VersionTableConflict,
  PgClient | SchemaReady | InstanceProvider.InstanceProvider | PerspectiveRewinder.PerspectiveRewinder
>

/**
 * The ports and the perspective worker, with this instance registered in `wh_service_instances` (heartbeats,
 * partition spreading, takeover of abandoned instances) for as long as the layer lives. The worker stops before
 * the instance deregisters. The configuration is checked first, once ({@link decode}).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (config: Config): PipelineLayer => Layer.unwrap(Effect.map(decode(config), layerDecoded))

/**
 * {@link layer} for a configuration {@link decode} checked already: nothing is decoded again on the way to the
 * claim loop.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerDecoded = (config: Decoded): PipelineLayer =>
  PerspectiveWorker.layerDecoded(config.worker).pipe(
    Layer.merge(versionsBuild(config)),
    Layer.provideMerge(ports(config, true)),
    Layer.provideMerge(PgInstanceRegistry.layerDecoded(config.registry))
  )
