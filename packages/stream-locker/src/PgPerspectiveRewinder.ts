/**
 * The Postgres `PerspectiveRewinder`: rebuilds a (stream, perspective) flagged RewindRequired by a late arrival.
 *
 * The worker's fetch flags the cursor (lowest trigger event id, flag timestamps) and hands the pair to this
 * service, which:
 * 1. waits out the debounce — no new late arrival for `debounceWindow` (sliding, default 5 s), or flagged for
 *    `debounceCap` (default 30 s) — so a burst of late events causes one rewind;
 * 2. takes the stream lock (`withStreamLock`, reason `"rewind"`; not acquired -> `locked`, retried next cycle);
 * 3. loads the latest snapshot strictly before the trigger (or starts from the initial model), replays every
 *    event of the stream the perspective handles, in event-id order, from `wh_events`;
 * 4. in ONE transaction, fenced on still holding the lock: drops the snapshots at or after the trigger, writes
 *    the model once and fresh snapshots, moves the cursor to the last replayed event, clears the flag and deletes
 *    exactly the work rows the replay covered. Events appended meanwhile keep their work rows: they are applied
 *    after (or flag a new rewind, if they are late too).
 *
 * A failure is logged, counted (`stats`, `onRewindFailed`) and retried at a later cycle; the lock is always
 * released. At start-up the layer scans for flagged cursors (`startupScan`: `"blocking"` before the layer is
 * ready, `"background"` in a fiber, or `"off"`) and rewinds them without waiting for the debounce.
 *
 * **When to use**: provide it to the worker — `layerPipeline` composes it with `PgPerspectivePipeline`, or
 * provide `layer` to `PerspectiveWorker.layer` yourself (the worker requires a rewinder).
 *
 * @since 0.1.0
 */
import {
  type DefinitionErrors,
  InstanceProvider,
  type EventRegistry,
  type Perspective,
  PerspectiveRegistry,
  PerspectiveRewinder
} from "@whizbang/core"
import { OutageLog } from "@whizbang/core/internal"
import { PgClient, PgPerspectivePipeline, PgPerspectiveSnapshots, type PostgresError } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Context, Duration, Effect, Layer, Ref } from "effect"
import { decodeDuration, decodeStartupScan } from "./internal/rebuildOptions.js"
import { type Debounce, rewindDue } from "./internal/dueRewinds.js"
import { type Rewinding, rewindOne } from "./internal/rewindOne.js"
import type { PerspectiveStreamLocker } from "./PerspectiveStreamLocker.js"
import * as PgPerspectiveStreamLocker from "./PgPerspectiveStreamLocker.js"
import * as PerspectiveStreamLockOptions from "./PerspectiveStreamLockOptions.js"
import type { InvalidRebuildOptions, InvalidStreamLockOptions } from "./StreamLockError.js"

/**
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Sliding debounce window: no new late arrival for this long. Default 5 s. */
  readonly debounceWindow?: Duration.Input
  /** Debounce cap: rewind anyway once flagged this long. Default 30 s. */
  readonly debounceCap?: Duration.Input
  /** Start-up scan of flagged cursors. Default `"blocking"`. */
  readonly startupScan?: "blocking" | "background" | "off"
  /** Snapshot interval and retention (the same as the coordinator's). */
  readonly snapshots?: PgPerspectiveSnapshots.Input
}

/**
 * Callbacks for monitoring and deterministic tests. A failing hook fails that rewind (and it is retried).
 *
 * @category models
 * @since 0.1.0
 */
export interface Hooks {
  /** Under the lock, before the replay. */
  readonly onRewindStarted?: (target: PerspectiveRewinder.Target) => Effect.Effect<void>
  /** After the replay, before the commit. */
  readonly onReplayed?: (target: PerspectiveRewinder.Target, events: number) => Effect.Effect<void>
  readonly onRewound?: (result: PerspectiveRewinder.Result) => Effect.Effect<void>
  readonly onRewindFailed?: (result: PerspectiveRewinder.Result) => Effect.Effect<void>
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Config {
  readonly events: EventRegistry.EventRegistry
  readonly perspectives: ReadonlyArray<Perspective.Any>
  readonly options?: Options
  readonly hooks?: Hooks
}

/**
 * Counters since start.
 *
 * @category models
 * @since 0.1.0
 */
export interface Stats {
  readonly rewound: number
  readonly failed: number
  readonly locked: number
  readonly replayedEvents: number
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Shape extends PerspectiveRewinder.Shape {
  /** Rewinds one pair if it is flagged; `force` ignores the debounce. */
  readonly rewind: (target: PerspectiveRewinder.Target, options?: { readonly force?: boolean }) => Effect.Effect<PerspectiveRewinder.Result>
  /** Rewinds every flagged cursor of the configured perspectives, ignoring the debounce (the start-up scan). */
  readonly scan: Effect.Effect<ReadonlyArray<PerspectiveRewinder.Result>>
  readonly stats: Effect.Effect<Stats>
}

/**
 * @category services
 * @since 0.1.0
 */
export class PgPerspectiveRewinder extends Context.Service<PgPerspectiveRewinder, Shape>()(
  "@whizbang/stream-locker/PgPerspectiveRewinder"
) {}

const Rewinds = PgOperations.Rewinds

/**
 * {@link Options} as {@link decodeOptions} leaves them (defaults filled).
 *
 * @category models
 * @since 0.5.0
 */
export interface DecodedOptions {
  readonly debounceWindow: Duration.Duration
  readonly debounceCap: Duration.Duration
  readonly startupScan: "blocking" | "background" | "off"
  readonly snapshots: PgPerspectiveSnapshots.Options
}

/**
 * A {@link Config} whose options {@link decodeOptions} checked.
 *
 * @category models
 * @since 0.5.0
 */
export interface Decoded extends Omit<Config, "options"> {
  readonly options: DecodedOptions
}

/**
 * Checks the options: the debounce durations finite and positive, `startupScan` one of its three values (else
 * {@link InvalidRebuildOptions} naming the option after `prefix`, `Whizbang.layer`'s `rewind.`), the snapshots'
 * (`PgPerspectiveSnapshots.decode`).
 *
 * @category constructors
 * @since 0.5.0
 */
export const decodeOptions = (
  options: Options = {},
  prefix = ""
): Effect.Effect<DecodedOptions, InvalidRebuildOptions | PostgresError.PostgresConfigError> =>
  Effect.gen(function* () {
    const debounceWindow = yield* decodeDuration(`${prefix}debounceWindow`, options.debounceWindow, Duration.seconds(5))
    const debounceCap = yield* decodeDuration(`${prefix}debounceCap`, options.debounceCap, Duration.seconds(30))
    const startupScan = yield* decodeStartupScan(`${prefix}startupScan`, options.startupScan)
    const snapshots = yield* PgPerspectiveSnapshots.decode(options.snapshots)
    return { debounceWindow, debounceCap, startupScan, snapshots }
  })

/**
 * Builds the rewinder and runs the start-up scan as configured; the options are checked first ({@link decodeOptions}).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (config: Config) => Effect.flatMap(decodeOptions(config.options), (options) => makeDecoded({ ...config, options }))

/**
 * {@link make} for options {@link decodeOptions} checked already.
 *
 * @category constructors
 * @since 0.5.0
 */
export const makeDecoded = (config: Decoded) =>
  Effect.gen(function* () {
    const options = config.options
    const client = yield* PgClient.PgClient
    const { instanceId } = yield* InstanceProvider.InstanceProvider
    const context = yield* Effect.context<PerspectiveStreamLocker | InstanceProvider.InstanceProvider>()
    const registry = yield* PerspectiveRegistry.make(config.perspectives)
    const stats = yield* Ref.make<Stats>({ rewound: 0, failed: 0, locked: 0, replayedEvents: 0 })
    const rewinding: Rewinding = {
      client,
      instanceId,
      context,
      registry,
      events: config.events,
      snapshots: options.snapshots,
      hooks: config.hooks ?? {},
      stats
    }
    // Reading the flagged cursors fails with the database: once logged for a run of failures (see OutageLog).
    const flaggedLog = yield* OutageLog.make("reading flagged cursors for rewinds")
    const debounce: Debounce = {
      windowMillis: Duration.toMillis(options.debounceWindow),
      capMillis: Duration.toMillis(options.debounceCap),
      flaggedLog
    }

    const scan = Rewinds.scanFlagged(client, { perspectiveNames: registry.names }).pipe(
      Effect.flatMap((rows) =>
        Effect.forEach(rows, (r) => rewindOne(rewinding, { streamId: r.streamId, perspectiveName: r.perspectiveName }))
      ),
      Effect.tap((results) =>
        results.length > 0 ? Effect.logInfo(`start-up scan: ${results.length} flagged cursor(s) handled`) : Effect.void
      ),
      Effect.catchCause((cause) =>
        Effect.as(
          Effect.andThen(
            Effect.logWarning(`the rewind scan failed: ${OutageLog.causeMessage(cause)}; flagged cursors are rewound by the worker`),
            Effect.logDebug("the rewind scan failed", cause)
          ),
          []
        )
      )
    )

    const service = PgPerspectiveRewinder.of({
      rewindFlagged: (targets) => (targets.length === 0 ? Effect.succeed([]) : rewindDue(rewinding, debounce, targets, false)),
      rewind: (target, o) => Effect.map(rewindDue(rewinding, debounce, [target], o?.force ?? false), (results) => results[0]!),
      scan,
      stats: Ref.get(stats)
    })
    const mode = options.startupScan
    if (mode === "blocking") yield* scan
    if (mode === "background") yield* Effect.forkScoped(scan)
    return service
  })

/**
 * The rewinder as a layer: provides both this service and core's `PerspectiveRewinder` port (what the worker
 * looks up). Needs a `PgClient`, a `PerspectiveStreamLocker` and an `InstanceProvider`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  config: Config
): Layer.Layer<
  PgPerspectiveRewinder | PerspectiveRewinder.PerspectiveRewinder,
  InvalidRebuildOptions | PostgresError.PostgresConfigError | DefinitionErrors.PerspectiveDefinitionError,
  PgClient.PgClient | PerspectiveStreamLocker | InstanceProvider.InstanceProvider
> => Layer.unwrap(Effect.map(decodeOptions(config.options), (options) => layerDecoded({ ...config, options })))

/**
 * {@link layer} for options {@link decodeOptions} checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerDecoded = (
  config: Decoded
): Layer.Layer<
  PgPerspectiveRewinder | PerspectiveRewinder.PerspectiveRewinder,
  DefinitionErrors.PerspectiveDefinitionError,
  PgClient.PgClient | PerspectiveStreamLocker | InstanceProvider.InstanceProvider
> =>
  Layer.effectContext(
    Effect.map(makeDecoded(config), (service) =>
      Context.make(PgPerspectiveRewinder, service).pipe(Context.add(PerspectiveRewinder.PerspectiveRewinder, service))
    )
  )

type Pipeline = ReturnType<typeof PgPerspectivePipeline.layer>

/**
 * Options of {@link layerPipeline} beyond the pipeline's.
 *
 * @category models
 * @since 0.5.0
 */
export interface PipelineConfig extends PgPerspectivePipeline.Config {
  readonly rewind?: Omit<Options, "snapshots">
  readonly rewindHooks?: Hooks
  readonly lock?: PerspectiveStreamLockOptions.Input
}

/**
 * {@link PipelineConfig} as {@link decodePipeline} leaves it.
 *
 * @category models
 * @since 0.5.0
 */
export interface DecodedPipeline {
  readonly pipeline: PgPerspectivePipeline.Decoded
  readonly rewinder: Decoded
  readonly lock: PerspectiveStreamLockOptions.PerspectiveStreamLockOptions
}

/**
 * Checks every option {@link layerPipeline} uses, once, without connecting: the pipeline's
 * (`PgPerspectivePipeline.decode`), the rewinder's (`rewind.*`, `snapshots`) and the stream locks'.
 *
 * @category constructors
 * @since 0.5.0
 */
export const decodePipeline = (
  config: PipelineConfig
): Effect.Effect<DecodedPipeline, PgPerspectivePipeline.DecodeError | InvalidRebuildOptions | InvalidStreamLockOptions> =>
  Effect.gen(function* () {
    const pipeline = yield* PgPerspectivePipeline.decode(config)
    const options = yield* decodeOptions({ ...config.rewind, ...(config.snapshots ? { snapshots: config.snapshots } : {}) }, "rewind.")
    const lock = yield* PerspectiveStreamLockOptions.decode(config.lock)
    const rewinder: Decoded = {
      events: config.events,
      perspectives: config.perspectives,
      options,
      ...(config.rewindHooks ? { hooks: config.rewindHooks } : {})
    }
    return { pipeline, rewinder, lock }
  })

/**
 * `PgPerspectivePipeline.layer` with rewinds: the stream locker (`lock` options) and this rewinder (`rewind`
 * options and hooks) are provided to the worker. Snapshot options apply to both the coordinator and the rewinder.
 * The configuration is checked first, once ({@link decodePipeline}).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerPipeline = (
  config: PipelineConfig
): Layer.Layer<
  Layer.Success<Pipeline> | PgPerspectiveRewinder | PerspectiveRewinder.PerspectiveRewinder | PerspectiveStreamLocker,
  Layer.Error<Pipeline> | Layer.Error<ReturnType<typeof layer>> | InvalidStreamLockOptions,
  | Exclude<Layer.Services<Pipeline>, PerspectiveStreamLocker | PerspectiveRewinder.PerspectiveRewinder>
  | PgClient.PgClient
  | InstanceProvider.InstanceProvider
> => Layer.unwrap(Effect.map(decodePipeline(config), layerPipelineDecoded))

/**
 * {@link layerPipeline} for a configuration {@link decodePipeline} checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerPipelineDecoded = (
  config: DecodedPipeline
): Layer.Layer<
  Layer.Success<Pipeline> | PgPerspectiveRewinder | PerspectiveRewinder.PerspectiveRewinder | PerspectiveStreamLocker,
  Layer.Error<Pipeline>,
  | Exclude<Layer.Services<Pipeline>, PerspectiveStreamLocker | PerspectiveRewinder.PerspectiveRewinder>
  | PgClient.PgClient
  | InstanceProvider.InstanceProvider
> => {
  const support = layerDecoded(config.rewinder).pipe(Layer.provideMerge(PgPerspectiveStreamLocker.layerDecoded(config.lock)))
  return PgPerspectivePipeline.layerDecoded(config.pipeline).pipe(Layer.provideMerge(support))
}
