/**
 * Perspective versions on Postgres: change a perspective on a live service without downtime.
 *
 * A perspective declares a `version` (`Perspective.make({ name: "balance", version: 2, ... })`). Each version has
 * its own table (`wh_per_balance__v2`) and its own work, cursors and dead letters (filed under its key,
 * `balance__v2`); `wh_per_balance` is a view of the live version, the name users read through.
 *
 * - **Registration** ({@link register}, run by `PgPerspectivePipeline` and `Whizbang.layer` at start-up): a version
 *   the database has not seen is registered in one transaction that briefly holds appends (a SHARE lock on
 *   `wh_events`, waiting for appends in flight): every event committed before is planned as history
 *   (`wh_perspective_backfill`, per stream the newest event id), every later append routes to the version itself
 *   (`wh_append_events` reads the registry). So the hand-over from history to live events has no gap and no
 *   double, by construction. The first version of a perspective goes live at once; a later one is `building`.
 * - **Build** ({@link buildStep}, a fiber of every instance that runs the version): a stream's history becomes work
 *   rows (not firing `PostPerspective` receptors) in the same transaction that forgets its plan row; the version's
 *   live work on a stream still planned is held back until then. The normal worker applies it all, in order.
 * - **Cutover** ({@link cutover}; automatic for the newest declared version once caught up, unless disabled): the
 *   version is marked `ready` (read-your-writes waits now include it), waits until it applied every event pending
 *   at that moment, then in one transaction becomes `live` and replaces the view; the old live version becomes
 *   `retiring` and is kept up to date for a grace period, during which {@link rollback} is the same hand-over back.
 *   After the grace period it is `retired`: no longer routed nor processed.
 * - **A hand-over always finishes**: its owner holds a lease on it (`CutoverOptions.lease`, default 10 seconds,
 *   renewed every third of it). If the owner dies after `ready` (kill -9, a crash, a lost database), the build loop
 *   of an instance that runs the version — another one, or the same after its restart — takes it over once the
 *   lease has run out and finishes it: within `lease` + the loop's `interval` (10 + 1 seconds by default). A graceful
 *   stop lets the lease go, so it is resumed at the next round (within `interval`). One instance takes it over
 *   (under the base's row lock), and the switch happens once. A hand-over that dies before `ready` changed nothing:
 *   the next automatic cutover (or the operator) starts it again.
 *
 * Lifecycle receptors: only work of the version live at append time fires `PostPerspective`, so replayed history
 * fires nothing and a new event fires once.
 *
 * @since 0.3.0
 */

import type { Context, Duration, Effect, Layer, Metric } from "effect"
import * as HandOver from "./internal/handOver.js"
import * as BuildLoop from "./internal/versions/buildLoop.js"
import * as BuildStep from "./internal/versions/buildStep.js"
import * as Listing from "./internal/versions/listing.js"
import * as Registry from "./internal/versions/registry.js"
import * as Switching from "./internal/versions/switching.js"
import type { PgClient } from "./PgClient.js"
import type * as PgHistoryReplay from "./PgHistoryReplay.js"
import type { PostgresConfigError, PostgresError } from "./PostgresError.js"
import type { SchemaReady } from "./SchemaReady.js"
import type {
  UnknownPerspectiveVersion,
  VersionError,
  VersionInUse,
  VersionNotReady,
  VersionTableConflict,
  VersionWaitTimedOut
} from "./VersionError.js"

/**
 * A version as an instance declares it (a `Perspective` has these fields).
 *
 * @category models
 * @since 0.3.0
 */
export interface Declared {
  /** The key: `<base>` for version 1, `<base>__v<N>` after. */
  readonly name: string
  readonly baseName: string
  readonly version: number
  readonly eventTypes: ReadonlyArray<string>
  /**
   * The perspective's fingerprint (a hash of its shape, initial model, event types and handlers' source text;
   * `PgPerspectivePipeline` gives it): registration warns when a known version's fingerprint changed, i.e. its logic
   * or shape changed without a new version.
   */
  readonly fingerprint?: string | undefined
}

/**
 * A version's state.
 *
 * @category models
 * @since 0.3.0
 */
export type State = "building" | "ready" | "live" | "retiring" | "retired"

/**
 * A registered version and its progress.
 *
 * @category models
 * @since 0.3.0
 */
export interface VersionInfo {
  readonly perspectiveName: string
  readonly baseName: string
  readonly version: number
  readonly state: State
  readonly eventTypes: ReadonlyArray<string>
  readonly registeredAt: Date
  readonly stateChangedAt: Date
  /** Retiring: when it retires. */
  readonly retireAfter: Date | undefined
  /** Streams of history planned at registration, and those still to be given to the worker. */
  readonly historyStreams: number
  readonly streamsToReplay: number
  /** Events of its types when it was registered (its history). */
  readonly historyEvents: number
  /** Work rows not applied yet: the version's lag in events. */
  readonly pendingEvents: number
  /** Seconds since the oldest pending work row was written (0 when none). */
  readonly lagSeconds: number
  /** Share of the history applied, 0..1 (1 when there was none). */
  readonly progress: number
  /** Events it dead-lettered (a version with any does not go live: its read models would lack them). */
  readonly deadLetters: number
  /** Some live instance runs this version (else its work waits for one: a rolling deploy). */
  readonly hasRunner: boolean
  /**
   * `building`, and caught up: its history replayed, at most 1,000 events pending (a cutover's default `maxLag`), no
   * dead letters, newer than the live version. A cutover would start now: the automatic one of the instances that
   * run it, or `whizbang cutover` / {@link cutover} where they run with `versions.autoCutover: false`.
   *
   * @since 0.3.0
   */
  readonly caughtUp: boolean
  /**
   * `ready`: until when the hand-over's owner holds it (it renews this while it runs).
   *
   * @since 0.3.0
   */
  readonly handOverUntil: Date | undefined
  /**
   * `ready`, and its hand-over's owner stopped renewing it (killed, crashed, stopped): the next build round of an
   * instance that runs the version resumes it.
   *
   * @since 0.3.0
   */
  readonly handOverAbandoned: boolean
  /**
   * While history is planned and being replayed (`PgHistoryReplay`): history events replayed per second, on average
   * since the replay started, and the seconds left at that rate. Undefined otherwise.
   */
  readonly replayEventsPerSecond?: number | undefined
  readonly replayEtaSeconds?: number | undefined
}

/**
 * Options of the hand-over.
 *
 * @category models
 * @since 0.3.0
 */
export interface CutoverOptions {
  /** At most this many pending events to start a hand-over. Default 1,000. */
  readonly maxLag?: number | undefined
  /** How long to wait for the events pending at the start. Default 30 seconds. */
  readonly timeout?: Duration.Input | undefined
  /** How long the replaced version is kept up to date for a rollback. Default 10 minutes. */
  readonly grace?: Duration.Input | undefined
  /**
   * How long the hand-over's owner holds it without renewing (it renews every third of this while it runs). Once
   * past, an instance that runs the version resumes the hand-over. Default 10 seconds.
   *
   * @since 0.3.0
   */
  readonly lease?: Duration.Input | undefined
}

/**
 * What a cutover or rollback did.
 *
 * @category models
 * @since 0.3.0
 */
export interface CutoverResult {
  readonly baseName: string
  readonly live: string
  /** The version that stopped serving (now retiring), if any. */
  readonly replaced: string | undefined
  /** Milliseconds from the start to the commit that switched reads. */
  readonly millis: number
  /** False when nothing was switched: the version was already live, or no newer version to go to. */
  readonly switched: boolean
}

/**
 * Build progress of each version (0..1), by perspective key.
 *
 * @category metrics
 * @since 0.3.0
 */
export const buildProgressGauge: Metric.Gauge<number> = BuildStep.buildProgressGauge

/**
 * Pending events of each version, by perspective key, set by the build loop every round. A version neither building
 * nor with history planned (live, retiring) is counted up to 1,000: the gauge reads 1,000 for any larger backlog
 * (`whizbang_lag_events` from status has the full count per perspective).
 *
 * @category metrics
 * @since 0.3.0
 */
export const versionLagGauge: Metric.Gauge<number> = BuildStep.versionLagGauge

/**
 * Test hooks of the hand-over: `onStep(step, key)` runs at each step of a cutover or rollback started by this fiber
 * (`"locked"`: in the transaction that marks the version `ready`, its base's rows locked; `"ready"`: after that
 * commit, the lease held; `"caughtUp"`: before the switch). A test pauses there (`Effect.never`) to stop or kill
 * the process at that point. Provide it around `Whizbang.layer` (`Layer.provide(Layer.succeed(HandOverHooks, ...))`);
 * the default does nothing.
 *
 * @category testing
 * @since 0.3.0
 */
export const HandOverHooks: Context.Reference<HandOver.HooksShape> = HandOver.Hooks

/**
 * A step of the hand-over where {@link HandOverHooks} run.
 *
 * @category testing
 * @since 0.3.0
 */
export type HandOverStep = HandOver.Step

/**
 * What a cutover or rollback can fail with (a bad option is a `PostgresConfigError` naming it).
 *
 * @category errors
 * @since 0.3.0
 */
export type HandOverError = Exclude<VersionError, VersionWaitTimedOut | VersionInUse> | PostgresConfigError

/**
 * Registers the declared versions (see the module notes) and sets up their tables and the views. Returns the
 * versions this call registered.
 *
 * @category operations
 * @since 0.3.0
 */
export const register: (
  declared: ReadonlyArray<Declared>
) => Effect.Effect<ReadonlyArray<string>, PostgresError | VersionTableConflict, PgClient> = Registry.register

/**
 * Options of {@link listWith}.
 *
 * @category models
 * @since 0.3.0
 */
export interface ListOptions {
  /**
   * An instance whose heartbeat is older than this does not count as running a version (`hasRunner`). Default the
   * workers' `abandonStaleInstanceThreshold` default, 30 seconds, as `PgWatchdog`'s `deadInstanceAfter`.
   */
  readonly deadInstanceAfter?: Duration.Input | undefined
}

/**
 * Every registered version with its state and progress, by base name then version.
 *
 * @category operations
 * @since 0.3.0
 */
export const listWith: (options?: ListOptions) => Effect.Effect<ReadonlyArray<VersionInfo>, PostgresError, PgClient> = Listing.listWith

/**
 * {@link listWith} the default options.
 *
 * @category operations
 * @since 0.3.0
 */
export const list: Effect.Effect<ReadonlyArray<VersionInfo>, PostgresError, PgClient> = Listing.list

/**
 * Switches reads of `baseName` to `version` (default: the newest version newer than the live one that is not
 * retired — `building`, `ready`, or `retiring` after a {@link rollback}; never an older one, that is
 * {@link rollback}; none is nothing to do, `switched: false`): marks it `ready`, waits until it applied every event
 * pending at that moment, then in one transaction makes it `live`, points `wh_per_<base>` at its table and makes the
 * previous live version `retiring` for the grace period. Fails with a typed error, switching nothing, when the
 * version is unknown (the refusal names the registered versions of the base, or every registered perspective when
 * the base has none), not caught up or too slow. A version already `ready` (another hand-over runs) is joined; one
 * whose hand-over was abandoned is taken over. Once `ready`, the hand-over is finished even if this fiber stops:
 * see the module notes.
 *
 * @category operations
 * @since 0.3.0
 */
export const cutover: (
  baseName: string,
  version?: number,
  options?: CutoverOptions
) => Effect.Effect<CutoverResult, PostgresError | HandOverError, PgClient> = Switching.cutover

/**
 * Switches reads of `baseName` back to an older version still `retiring` (kept up to date for its grace period):
 * the newest one older than the live version, i.e. the one the last cutover replaced. The same hand-over as
 * {@link cutover}. Rollback only goes back: with no older version retiring (none was replaced, its grace period
 * ended, or the live version is already the older one after a rollback) it fails with {@link NothingToRollBack},
 * which names any newer retiring version ({@link cutover} goes forward to it).
 *
 * @category operations
 * @since 0.3.0
 */
export const rollback: (
  baseName: string,
  options?: CutoverOptions
) => Effect.Effect<CutoverResult, PostgresError | HandOverError, PgClient> = Switching.rollback

/**
 * What {@link retire} did, per version.
 *
 * @category models
 * @since 0.3.0
 */
export interface Retired {
  readonly perspectiveName: string
  /** Pending work rows dropped. */
  readonly dropped: number
  /** Streams of history no longer planned for it. */
  readonly unplanned: number
}

/**
 * Options of {@link retire}.
 *
 * @category models
 * @since 0.3.0
 */
export interface RetireOptions {
  /** Retire even while live instances run it (they log that it is retired at their next start). */
  readonly force?: boolean | undefined
  /** An instance counts as live when its heartbeat is younger than this; default 30 seconds. */
  readonly deadInstanceAfter?: Duration.Input | undefined
}

/**
 * Retires a perspective removed from the code: `name` is a version's key (`balance__v2`), or a base name for every
 * version of it not retired yet. A retired version is no longer routed (appends stop giving it work) nor processed;
 * its pending work and planned history are dropped in the same transaction, which first waits for appends in flight
 * (so none routes to it afterwards). Its table and, for a live version, the view `wh_per_<base>` stay as they are
 * (drop them yourself). Refused with {@link VersionInUse} while a live instance runs it (unless `force`) or while a
 * cutover or rollback hands reads over to it; an unknown name is {@link UnknownPerspectiveVersion}, naming the
 * registered ones. Retiring what is already retired does nothing (an empty result).
 *
 * @category operations
 * @since 0.3.0
 */
export const retire: (
  name: string,
  options?: RetireOptions
) => Effect.Effect<ReadonlyArray<Retired>, PostgresError | PostgresConfigError | UnknownPerspectiveVersion | VersionInUse, PgClient> =
  Registry.retire

/**
 * Waits until the version `key` (`balance__v2`) serves reads, checking every `interval` (default 100 ms) for at most
 * `timeout` (default 10 minutes); returns it as then listed. For a deploy script or a test: the build loop of the
 * instances that run the version does the work. Fails at once, rather than waiting out the timeout, when it
 * cannot go live on its own: unknown (`UnknownPerspectiveVersion`), retired, or dead letters while it builds
 * (`VersionNotReady`); else `VersionWaitTimedOut` with its progress. A bad option is a `PostgresConfigError`.
 *
 * @category operations
 * @since 0.3.0
 */
export const awaitLive: (
  key: string,
  options?: {
    readonly timeout?: Duration.Input | undefined
    readonly interval?: Duration.Input | undefined
  }
) => Effect.Effect<
  VersionInfo,
  PostgresError | PostgresConfigError | UnknownPerspectiveVersion | VersionNotReady | VersionWaitTimedOut,
  PgClient
> = Switching.awaitLive

/**
 * Retires the versions whose grace period is over (see the module notes). Returns their keys.
 *
 * @category operations
 * @since 0.3.0
 */
export const retireDue: Effect.Effect<ReadonlyArray<string>, PostgresError, PgClient> = BuildStep.retireDue

/**
 * Options of the build loop.
 *
 * @category models
 * @since 0.3.0
 */
export interface BuildOptions {
  /** The worker's partition count (work rows carry a partition). */
  readonly partitionCount: number
  /** Streams whose history one statement writes as work. Default 200. */
  readonly chunkStreams?: number | undefined
  /** No more history is written while the version has this many events pending. Default 20,000. */
  readonly maxPending?: number | undefined
  /** Cut over to the newest declared version once it is caught up. Default true. */
  readonly autoCutover?: boolean | undefined
  /** Options of automatic cutovers. */
  readonly cutover?: CutoverOptions | undefined
  /**
   * Who applies planned history: `"work"` (default) writes it as work rows for the worker, chunk by chunk;
   * `"none"` leaves it to the replay (`PgHistoryReplay`), which `layerBuilder` is composed with.
   */
  readonly history?: "work" | "none" | undefined
}

/**
 * One round of the build loop for the versions this instance runs: gives planned history to the worker while the
 * version's backlog is below `maxPending`, finishes hand-overs abandoned by their owner (see the module notes), cuts
 * over to the newest declared version of a base once it is caught up (`autoCutover`), retires versions past their
 * grace period, and updates the gauges. Returns the streams of
 * history still planned for this instance's versions, the events it wrote as work, and the versions as listed at
 * the start of the round (a version neither building nor with history planned: pending events counted up to 1,000,
 * `lagSeconds` 0; {@link list} counts them all).
 *
 * @category operations
 * @since 0.3.0
 */
export const buildStep: (
  declared: ReadonlyArray<Declared>,
  options: BuildOptions
) => Effect.Effect<
  {
    readonly planned: number
    readonly written: number
    readonly versions: ReadonlyArray<VersionInfo>
  },
  PostgresError,
  PgClient
> = BuildStep.buildStep

/**
 * Options of the version build loop in `PgPerspectivePipeline` / `Whizbang.layer` (`versions`).
 *
 * @category models
 * @since 0.3.0
 */
export interface Options extends Omit<BuildOptions, "partitionCount" | "history">, PgHistoryReplay.Options {
  /** Rounds of the loop while nothing is being built. Default 1 second; `null` turns the loop off. */
  readonly interval?: Duration.Input | null | undefined
}

/**
 * {@link Options} as {@link decodeOptions} leaves them.
 *
 * @category models
 * @since 0.5.0
 */
export interface DecodedOptions {
  readonly interval: Duration.Duration | null
  readonly build: Omit<BuildOptions, "partitionCount">
  /** The replay of history's options (`PgHistoryReplay`). */
  readonly replay: PgHistoryReplay.Decoded
}

/**
 * Checks {@link Options}; a bad value is a `PostgresConfigError` naming it.
 *
 * @category constructors
 * @since 0.3.0
 */
export const decodeOptions: (options: Options | undefined) => Effect.Effect<DecodedOptions, PostgresConfigError> = BuildLoop.decodeOptions

/**
 * Registers the versions at start-up (after the schema is migrated); fails the layer on a table conflict.
 *
 * @category layers
 * @since 0.3.0
 */
export const layerRegistration: (
  declared: ReadonlyArray<Declared>
) => Layer.Layer<never, PostgresError | VersionTableConflict, PgClient | SchemaReady> = Registry.layerRegistration

/**
 * The build loop of the versions this instance runs, for as long as the layer lives: {@link buildStep} at once
 * again while history is being written, every 50 ms while the version's backlog holds history back, else every
 * `interval`. Progress is logged every 10%; a failed round is logged (once for a run of failures, see `OutageLog`
 * in core) and the loop goes on. While it writes history it refreshes the work table's planner statistics (ANALYZE, at most
 * every 2 seconds), so the fast-growing table does not slow every perspective's cycles until autovacuum gets to it.
 * Its first round runs at start, or after `interval` when the tenant fleet found no version work just before the
 * start (`TenantStart`).
 *
 * @category layers
 * @since 0.3.0
 */
export const layerBuilder: (
  declared: ReadonlyArray<Declared>,
  options: Options | undefined,
  partitionCount: number
) => Layer.Layer<never, PostgresConfigError, PgClient> = BuildLoop.layerBuilder

/**
 * {@link layerBuilder} for options {@link decodeOptions} checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerBuilderDecoded: (
  declared: ReadonlyArray<Declared>,
  options: DecodedOptions,
  partitionCount: number
) => Layer.Layer<never, never, PgClient> = BuildLoop.layerBuilderDecoded
