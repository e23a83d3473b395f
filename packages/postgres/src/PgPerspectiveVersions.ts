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
import { OutageLog, Perspective, WorkerOptions } from "@whizbang/core"
import { Clock, type Context, Duration, Effect, Layer, Metric } from "effect"
import * as DurationOptions from "./internal/durationOption.js"
import * as HandOver from "./internal/handOver.js"
import * as PgHistoryReplay from "./PgHistoryReplay.js"
import { ddlLock, ensureBase } from "./internal/versionTables.js"
import { PgClient } from "./PgClient.js"
import { PostgresConfigError, type PostgresError } from "./PostgresError.js"
import { SchemaReady } from "./SchemaReady.js"
import * as Sql from "./sql/versions.js"
import {
  NothingToRollBack,
  UnknownPerspectiveVersion,
  type VersionError,
  VersionNotReady,
  VersionInUse,
  VersionWaitTimedOut,
  type VersionTableConflict
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
   * `PerspectiveFingerprint.of` the perspective (`PgPerspectivePipeline` gives it): registration warns when a known
   * version's fingerprint changed, i.e. its logic or shape changed without a new version.
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
export const buildProgressGauge = Metric.gauge("whizbang_version_build_progress", {
  description: "share of a perspective version's history applied (0..1)"
})

/**
 * Pending events of each version, by perspective key, set by the build loop every round. A version neither building
 * nor with history planned (live, retiring) is counted up to 1,000: the gauge reads 1,000 for any larger backlog
 * (`whizbang_lag_events` from status has the full count per perspective).
 *
 * @category metrics
 * @since 0.3.0
 */
export const versionLagGauge = Metric.gauge("whizbang_version_lag_events", {
  description: "events routed to a perspective version and not applied yet"
})

const defaultMaxLag = 1_000

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
 * The build loop counts the pending events of a version that is neither building nor has history planned (a live
 * or retiring one) up to this many: `whizbang_version_lag_events` reads this for any larger backlog.
 */
const buildLoopLagCountCap = 1_000

/** The build loop refreshes the work table's statistics after this much history, at most every 2 seconds. */
const analyzeAfterRows = 2_000
const analyzeAtMostEveryMillis = 2_000
/** While the version's backlog holds history back, the build loop looks again after this long (not `interval`). */
const heldBackPauseMillis = 50

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
export const register = (
  declared: ReadonlyArray<Declared>
): Effect.Effect<ReadonlyArray<string>, PostgresError | VersionTableConflict, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const byBase = new Map<string, Array<Declared>>()
    for (const d of declared) byBase.set(d.baseName, [...(byBase.get(d.baseName) ?? []), d])
    return yield* client.withTransaction(
      Effect.gen(function* () {
        yield* client.query(ddlLock)
        const added: Array<string> = []
        let appendsHeld = false
        const holdAppends = Effect.suspend(() => {
          if (appendsHeld) return Effect.void
          appendsHeld = true
          return Effect.asVoid(client.query(Sql.lockAppends))
        })
        for (const [baseName, versions] of byBase) {
          const rows = yield* client.query<{
            perspective_name: string
            version: number
            state: State
            event_types: Array<string>
            fingerprint: string | null
          }>(Sql.versionsOfBase, [baseName])
          let hasLive = rows.some((r) => r.state === "live")
          for (const d of [...versions].sort((a, b) => a.version - b.version)) {
            const row = rows.find((r) => r.perspective_name === d.name)
            const types = [...new Set(d.eventTypes)].sort()
            if (row === undefined) {
              const legacy = (yield* client.query<{ present: boolean }>(Sql.hasHistory, [d.name]))[0]?.present === true
              // A version processed before versions existed was routed by its appenders: its history is applied.
              if (!legacy) yield* holdAppends
              yield* client.query(Sql.insertVersion, [
                d.name,
                baseName,
                d.version,
                hasLive ? "building" : "live",
                types,
                d.fingerprint ?? null
              ])
              hasLive = true
              if (!legacy) yield* client.query(Sql.planBackfill, [d.name, types])
              added.push(d.name)
              continue
            }
            const known = [...row.event_types].sort()
            if (known.join("\u0000") !== types.join("\u0000")) {
              yield* holdAppends
              yield* client.query(Sql.updateEventTypes, [d.name, types])
              const gained = types.filter((t) => !known.includes(t))
              if (gained.length > 0) {
                yield* Effect.logWarning(
                  `perspective ${d.name} now handles ${gained.join(", ")}: new events of these types are routed to it, their history is not replayed (raise its version to rebuild it)`
                )
              }
            }
            if (row.state === "retired") {
              yield* Effect.logWarning(`perspective ${d.name} is retired: this instance runs it, but it is no longer routed nor served`)
            }
            if (d.fingerprint !== undefined && row.fingerprint !== d.fingerprint) {
              if (row.fingerprint !== null) {
                yield* Effect.logWarning(
                  `perspective ${d.name}: its model, initial value or handlers differ from those version ${d.version} was registered with; ` +
                    `the rows built so far keep the old logic — declare version ${d.version + 1} to rebuild them ` +
                    "(a different compiler or bundler changes a handler's source text too)"
                )
              }
              yield* client.query(Sql.updateFingerprint, [d.name, d.fingerprint])
            }
          }
          yield* ensureBase(
            client,
            baseName,
            versions.map((v) => v.name)
          )
        }
        return added
      })
    )
  })

interface ListedRow {
  readonly perspective_name: string
  readonly base_name: string
  readonly version: number
  readonly state: State
  readonly event_types: Array<string>
  readonly registered_at: Date
  readonly state_changed_at: Date
  readonly retire_after: Date | null
  readonly backfill_streams: number
  readonly backfill_events: string | number
  readonly planned: number
  readonly pending: number
  readonly oldest_pending: Date | null
  readonly dead_letters: number
  readonly has_runner: boolean
  readonly handover_until: Date | null
  readonly handover_abandoned: boolean
  readonly replay_started_at: Date | null
}

const toInfo =
  (now: number) =>
  (r: ListedRow): VersionInfo => {
    const historyEvents = Number(r.backfill_events)
    const replayedStreams = r.backfill_streams - r.planned
    // Planned streams count as not applied; of the streams given to the worker, pending work is not applied yet.
    const streamShare = r.backfill_streams === 0 ? 1 : replayedStreams / r.backfill_streams
    const eventShare = historyEvents === 0 ? 1 : Math.max(0, 1 - r.pending / historyEvents)
    const progress = r.state === "building" || r.planned > 0 ? Math.min(streamShare, eventShare) : 1
    // The replay's average rate since it started: the planned streams' share of the history's events, done.
    const replaySeconds = r.replay_started_at === null || r.planned === 0 ? 0 : (now - r.replay_started_at.getTime()) / 1000
    const replayRate = replaySeconds > 0 ? (historyEvents * streamShare) / replaySeconds : undefined
    return {
      perspectiveName: r.perspective_name,
      baseName: r.base_name,
      version: r.version,
      state: r.state,
      eventTypes: r.event_types,
      registeredAt: r.registered_at,
      stateChangedAt: r.state_changed_at,
      retireAfter: r.retire_after ?? undefined,
      historyStreams: r.backfill_streams,
      streamsToReplay: r.planned,
      historyEvents,
      pendingEvents: r.pending,
      lagSeconds: r.oldest_pending === null ? 0 : Math.max(0, (now - r.oldest_pending.getTime()) / 1000),
      progress: Math.max(0, Math.min(1, progress)),
      deadLetters: r.dead_letters,
      hasRunner: r.has_runner,
      caughtUp: false,
      handOverUntil: r.handover_until ?? undefined,
      handOverAbandoned: r.handover_abandoned,
      replayEventsPerSecond: replayRate,
      replayEtaSeconds: replayRate === undefined || replayRate === 0 ? undefined : (historyEvents * (1 - streamShare)) / replayRate
    }
  }

/** Marks the building versions a cutover would start on now (see `VersionInfo.caughtUp`). */
const withCaughtUp = (versions: ReadonlyArray<VersionInfo>): ReadonlyArray<VersionInfo> =>
  versions.map((v) => {
    const live = versions.find((x) => x.baseName === v.baseName && x.state === "live")
    const caughtUp =
      v.state === "building" &&
      v.streamsToReplay === 0 &&
      v.pendingEvents <= defaultMaxLag &&
      v.deadLetters === 0 &&
      live !== undefined &&
      live.version < v.version
    return caughtUp ? { ...v, caughtUp } : v
  })

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
export const listWith = (options: ListOptions = {}): Effect.Effect<ReadonlyArray<VersionInfo>, PostgresError, PgClient> =>
  Effect.gen(function* () {
    const deadAfter = Duration.toSeconds(
      options.deadInstanceAfter === undefined
        ? WorkerOptions.defaults.abandonStaleInstanceThreshold
        : Duration.fromInputUnsafe(options.deadInstanceAfter)
    )
    return yield* listed(Sql.listVersions, [deadAfter])
  })

/** The versions a listing statement returns, as `VersionInfo`s. */
const listed = (sql: string, params: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<VersionInfo>, PostgresError, PgClient> =>
  Effect.gen(function* () {
    const rows = yield* (yield* PgClient).query<ListedRow>(sql, params)
    const now = yield* Clock.currentTimeMillis
    return withCaughtUp(rows.map(toInfo(now)))
  })

/**
 * The build loop's listing, every round: as {@link list}, except that a version neither building nor with history
 * planned has its pending events counted up to {@link buildLoopLagCountCap} and no `lagSeconds` (0): counting a live
 * version's whole backlog every round was most of the loop's database time under load.
 */
const listForBuild = listed(Sql.listVersionsForBuild, [
  Duration.toSeconds(WorkerOptions.defaults.abandonStaleInstanceThreshold),
  buildLoopLagCountCap
])

/**
 * {@link listWith} the default options.
 *
 * @category operations
 * @since 0.3.0
 */
export const list: Effect.Effect<ReadonlyArray<VersionInfo>, PostgresError, PgClient> = listWith()

const positiveInt = (option: string, value: unknown): Effect.Effect<void, PostgresConfigError> =>
  value === undefined || (typeof value === "number" && Number.isInteger(value) && value > 0)
    ? Effect.void
    : Effect.fail(new PostgresConfigError({ option, message: `${option} must be a positive integer, got ${String(value)}` }))

/** {@link CutoverOptions} checked (a bad value is a `PostgresConfigError` naming it, under `prefix`) and defaulted. */
const decodeCutover = (options: CutoverOptions | undefined, prefix = ""): Effect.Effect<HandOver.Settings, PostgresConfigError> =>
  Effect.gen(function* () {
    yield* positiveInt(`${prefix}maxLag`, options?.maxLag)
    return {
      maxLag: options?.maxLag ?? defaultMaxLag,
      timeoutMillis: Duration.toMillis(
        yield* DurationOptions.decode(`${prefix}timeout`, options?.timeout, "positive", Duration.seconds(30))
      ),
      graceSeconds: Duration.toSeconds(
        yield* DurationOptions.decode(`${prefix}grace`, options?.grace, "nonNegative", Duration.minutes(10))
      ),
      leaseSeconds: Duration.toSeconds(yield* DurationOptions.decode(`${prefix}lease`, options?.lease, "positive", Duration.seconds(10)))
    }
  })

interface BaseRow {
  readonly perspective_name: string
  readonly version: number
  readonly state: State
}

const versionsOf = (client: PgClient["Service"], baseName: string) =>
  client.query<BaseRow>(
    `SELECT perspective_name, version, state FROM wh_perspective_versions WHERE base_name = $1::text ORDER BY version`,
    [baseName]
  )

/** No version of `baseName` (or not `version`): the refusal names the versions of the base, or every registered one. */
const unknown = (client: PgClient["Service"], baseName: string, version: number | undefined, rows: ReadonlyArray<BaseRow>) =>
  Effect.gen(function* () {
    const known =
      rows.length > 0
        ? rows.map((r) => r.perspective_name)
        : (yield* client.query<{ perspective_name: string }>(Sql.registeredKeys)).map((r) => r.perspective_name)
    return yield* new UnknownPerspectiveVersion({ baseName, version, known })
  })

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
export const cutover = (
  baseName: string,
  version?: number,
  options: CutoverOptions = {}
): Effect.Effect<CutoverResult, PostgresError | HandOverError, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const settings = yield* decodeCutover(options)
    const rows = yield* versionsOf(client, baseName)
    const current = rows.find((r) => r.state === "live")
    const target =
      version === undefined
        ? rows.filter((r) => r.state !== "live" && r.state !== "retired" && (current === undefined || r.version > current.version)).at(-1)
        : rows.find((r) => r.version === version)
    if (target === undefined) {
      if (version === undefined && current !== undefined) {
        return { baseName, live: current.perspective_name, replaced: undefined, millis: 0, switched: false }
      }
      return yield* unknown(client, baseName, version, rows)
    }
    return (yield* HandOver.run(client, baseName, target.perspective_name, settings, "start"))!
  })

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
export const rollback = (
  baseName: string,
  options: CutoverOptions = {}
): Effect.Effect<CutoverResult, PostgresError | HandOverError, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const settings = yield* decodeCutover(options)
    const rows = yield* versionsOf(client, baseName)
    if (rows.length === 0) return yield* unknown(client, baseName, undefined, rows)
    const live = rows.find((r) => r.state === "live")
    const older = (r: BaseRow) => live === undefined || r.version < live.version
    // A rollback already being handed over (`ready`) is joined.
    const previous = rows.filter((r) => (r.state === "retiring" || r.state === "ready") && older(r)).at(-1)
    if (previous === undefined) {
      return yield* new NothingToRollBack({
        baseName,
        live: live?.perspective_name,
        newer: rows.filter((r) => r.state === "retiring" && !older(r)).map((r) => r.perspective_name)
      })
    }
    return (yield* HandOver.run(client, baseName, previous.perspective_name, settings, "start"))!
  })

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
export const retire = (
  name: string,
  options: RetireOptions = {}
): Effect.Effect<ReadonlyArray<Retired>, PostgresError | PostgresConfigError | UnknownPerspectiveVersion | VersionInUse, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const deadAfter = yield* DurationOptions.decode("deadInstanceAfter", options.deadInstanceAfter, "positive", Duration.seconds(30))
    const { baseName } = Perspective.parseKey(name)
    return yield* client.withTransaction(
      Effect.gen(function* () {
        const rows = yield* client.query<BaseRow & { readonly event_types: ReadonlyArray<string> }>(Sql.versionsOfBase, [baseName])
        const named = rows.filter((r) => r.perspective_name === name)
        const targets = (named.length > 0 ? named : name === baseName ? rows : []).filter((r) => r.state !== "retired")
        if (named.length === 0 && (name !== baseName || rows.length === 0)) return yield* unknown(client, baseName, undefined, [])
        if (targets.length === 0) return []
        const keys = targets.map((r) => r.perspective_name)
        const handingOver = targets.find((r) => r.state === "ready")
        if (handingOver !== undefined) {
          return yield* new VersionInUse({ perspectiveName: handingOver.perspective_name, reason: "HandOverInProgress", instances: 0 })
        }
        if (options.force !== true) {
          const runners = yield* client.query<{ perspective_name: string; instances: number }>(Sql.liveRunners, [
            keys,
            Duration.toSeconds(deadAfter)
          ])
          const run = runners.find((r) => r.instances > 0)
          if (run !== undefined) {
            return yield* new VersionInUse({ perspectiveName: run.perspective_name, reason: "RunByLiveInstance", instances: run.instances })
          }
        }
        yield* client.query(Sql.lockAppends)
        const retired = yield* client.query<{ perspective_name: string; dropped: number; unplanned: number }>(Sql.retireVersions, [keys])
        for (const r of retired) {
          yield* Effect.logInfo(`perspective ${r.perspective_name} retired by hand (${r.dropped} pending work row(s) dropped)`)
        }
        return retired.map((r) => ({ perspectiveName: r.perspective_name, dropped: r.dropped, unplanned: r.unplanned }))
      })
    )
  })

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
export const awaitLive = (
  key: string,
  options: { readonly timeout?: Duration.Input | undefined; readonly interval?: Duration.Input | undefined } = {}
): Effect.Effect<
  VersionInfo,
  PostgresError | PostgresConfigError | UnknownPerspectiveVersion | VersionNotReady | VersionWaitTimedOut,
  PgClient
> =>
  Effect.gen(function* () {
    const timeoutMillis = Duration.toMillis(yield* DurationOptions.decode("timeout", options.timeout, "positive", Duration.minutes(10)))
    const interval = yield* DurationOptions.decode("interval", options.interval, "positive", Duration.millis(100))
    const started = yield* Clock.currentTimeMillis
    const { baseName, version } = Perspective.parseKey(key)
    while (true) {
      const versions = yield* list
      const v = versions.find((x) => x.perspectiveName === key)
      if (v === undefined) {
        const ofBase = versions.filter((x) => x.baseName === baseName)
        return yield* new UnknownPerspectiveVersion({
          baseName,
          version: key === baseName ? undefined : version,
          known: (ofBase.length > 0 ? ofBase : versions).map((x) => x.perspectiveName)
        })
      }
      if (v.state === "live") return v
      if (v.state === "retired" || (v.state === "building" && v.deadLetters > 0)) {
        return yield* new VersionNotReady({
          perspectiveName: key,
          state: v.state,
          streamsToReplay: v.streamsToReplay,
          pendingEvents: v.pendingEvents,
          deadLetters: v.deadLetters,
          maxLag: defaultMaxLag
        })
      }
      if ((yield* Clock.currentTimeMillis) - started >= timeoutMillis) {
        return yield* new VersionWaitTimedOut({
          perspectiveName: key,
          state: v.state,
          progress: v.progress,
          pendingEvents: v.pendingEvents,
          timeoutMillis
        })
      }
      yield* Effect.sleep(interval)
    }
  })

/**
 * Retires the versions whose grace period is over (see the module notes). Returns their keys.
 *
 * @category operations
 * @since 0.3.0
 */
export const retireDue: Effect.Effect<ReadonlyArray<string>, PostgresError, PgClient> = Effect.gen(function* () {
  const client = yield* PgClient
  const rows = yield* client.query<{ perspective_name: string; dropped: number }>(Sql.retireDue)
  for (const r of rows) yield* Effect.logInfo(`perspective ${r.perspective_name} retired (${r.dropped} pending work row(s) dropped)`)
  return rows.map((r) => r.perspective_name)
})

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
export const buildStep = (
  declared: ReadonlyArray<Declared>,
  options: BuildOptions
): Effect.Effect<
  { readonly planned: number; readonly written: number; readonly versions: ReadonlyArray<VersionInfo> },
  PostgresError,
  PgClient
> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const chunk = options.chunkStreams ?? 200
    const maxPending = options.maxPending ?? 20_000
    const mine = new Map(declared.map((d) => [d.name, d]))
    const listed = yield* listForBuild
    const versions = listed.filter((v) => v.state !== "retired")
    let planned = 0
    let written = 0
    for (const v of versions) {
      const d = mine.get(v.perspectiveName)
      if (d === undefined || v.streamsToReplay === 0 || options.history === "none") continue
      let pending = v.pendingEvents
      let left = v.streamsToReplay
      for (let round = 0; round < 20 && left > 0 && pending < maxPending; round++) {
        const r = (yield* client.query<{ streams: number; events: number }>(Sql.backfillChunk, [
          v.perspectiveName,
          chunk,
          [...d.eventTypes],
          options.partitionCount
        ]))[0]!
        if (r.streams === 0) break
        left -= r.streams
        pending += r.events
        written += r.events
      }
      planned += Math.max(0, left)
    }
    for (const v of versions) {
      yield* Metric.update(Metric.withAttributes(buildProgressGauge, { perspective: v.perspectiveName }), v.progress)
      yield* Metric.update(Metric.withAttributes(versionLagGauge, { perspective: v.perspectiveName }), v.pendingEvents)
    }
    // Hand-overs whose owner stopped renewing them (killed, crashed, stopped) are finished by an instance that runs
    // the version, whether or not it cuts over on its own: `ready` means a cutover or rollback was asked for.
    for (const v of versions) {
      if (v.state !== "ready" || !v.handOverAbandoned || !mine.has(v.perspectiveName)) continue
      yield* Effect.flatMap(decodeCutover(options.cutover), (settings) =>
        HandOver.run(client, v.baseName, v.perspectiveName, settings, "resume")
      ).pipe(
        Effect.catchTags({
          VersionNotReady: (e) => Effect.logWarning(e.message),
          CutoverTimedOut: (e) => Effect.logWarning(e.message),
          UnknownPerspectiveVersion: (e) => Effect.logWarning(e.message),
          // Checked at start-up by decodeOptions: cannot happen here.
          PostgresConfigError: (e) => Effect.logWarning(e.message)
        })
      )
    }
    if (options.autoCutover !== false) {
      const newest = new Map<string, Declared>()
      for (const d of declared) if ((newest.get(d.baseName)?.version ?? 0) < d.version) newest.set(d.baseName, d)
      for (const [baseName, d] of newest) {
        const v = versions.find((x) => x.perspectiveName === d.name)
        const live = versions.find((x) => x.baseName === baseName && x.state === "live")
        const maxLag = options.cutover?.maxLag ?? defaultMaxLag
        if (v?.state !== "building" || live === undefined || live.version >= d.version) continue
        if (v.streamsToReplay > 0 || v.pendingEvents > maxLag) continue
        // Said by the build loop's report when the count changes, not every round.
        if (v.deadLetters > 0) continue
        yield* cutover(baseName, d.version, options.cutover).pipe(
          Effect.catchTags({
            VersionNotReady: () => Effect.void,
            CutoverTimedOut: (e) => Effect.logWarning(e.message),
            UnknownPerspectiveVersion: (e) => Effect.logWarning(e.message),
            NothingToRollBack: () => Effect.void,
            VersionTableConflict: (e) => Effect.logWarning(e.message),
            // Checked at start-up by decodeOptions: cannot happen here.
            PostgresConfigError: (e) => Effect.logWarning(e.message)
          })
        )
      }
    }
    yield* retireDue
    return { planned, written, versions: listed }
  })

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
export const decodeOptions = (options: Options | undefined): Effect.Effect<DecodedOptions, PostgresConfigError> =>
  Effect.gen(function* () {
    const o = options ?? {}
    yield* positiveInt("versions.chunkStreams", o.chunkStreams)
    yield* positiveInt("versions.maxPending", o.maxPending)
    if (o.autoCutover !== undefined && typeof o.autoCutover !== "boolean") {
      return yield* new PostgresConfigError({ option: "versions.autoCutover", message: "versions.autoCutover must be a boolean" })
    }
    yield* decodeCutover(o.cutover, "versions.cutover.")
    const replay = yield* PgHistoryReplay.decodeOptions(o)
    const interval =
      o.interval === null ? null : yield* DurationOptions.decode("versions.interval", o.interval, "positive", Duration.seconds(1))
    return { interval, build: o, replay }
  })

/**
 * Registers the versions at start-up (after the schema is migrated); fails the layer on a table conflict.
 *
 * @category layers
 * @since 0.3.0
 */
export const layerRegistration = (
  declared: ReadonlyArray<Declared>
): Layer.Layer<never, PostgresError | VersionTableConflict, PgClient | SchemaReady> =>
  Layer.effectDiscard(Effect.andThen(SchemaReady, register(declared)))

/**
 * The build loop of the versions this instance runs, for as long as the layer lives: {@link buildStep} at once
 * again while history is being written, every 50 ms while the version's backlog holds history back, else every
 * `interval`. Progress is logged every 10%; a failed round is logged (once for a run of failures, see `OutageLog`
 * in core) and the loop goes on. While it writes history it refreshes the work table's planner statistics (ANALYZE, at most
 * every 2 seconds), so the fast-growing table does not slow every perspective's cycles until autovacuum gets to it.
 *
 * @category layers
 * @since 0.3.0
 */
export const layerBuilder = (
  declared: ReadonlyArray<Declared>,
  options: Options | undefined,
  partitionCount: number
): Layer.Layer<never, PostgresConfigError, PgClient> =>
  Layer.unwrap(Effect.map(decodeOptions(options), (decoded) => layerBuilderDecoded(declared, decoded, partitionCount)))

/**
 * {@link layerBuilder} for options {@link decodeOptions} checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerBuilderDecoded = (
  declared: ReadonlyArray<Declared>,
  { build, interval }: DecodedOptions,
  partitionCount: number
): Layer.Layer<never, never, PgClient> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      if (interval === null || declared.length === 0) return
      const reported = new Map<string, number>()
      // Versions said to be caught up and waiting for a manual cutover (autoCutover off): once each, per process.
      const waiting = new Set<string>()
      // Dead letters that keep a replayed version from going live, as last said: said again only when they change.
      const heldBack = new Map<string, number>()
      const report = (versions: ReadonlyArray<VersionInfo>) =>
        Effect.gen(function* () {
          for (const v of versions) {
            if (!declared.some((d) => d.name === v.perspectiveName)) continue
            const blocking = v.state === "building" && v.streamsToReplay === 0 ? v.deadLetters : 0
            if (blocking !== (heldBack.get(v.perspectiveName) ?? 0)) {
              heldBack.set(v.perspectiveName, blocking)
              if (blocking > 0) {
                yield* Effect.logWarning(
                  `perspective ${v.perspectiveName} has replayed its history but dead-lettered ${blocking} event(s): it does not go live until they are retried or discarded (whizbang dead-letters list -p ${v.perspectiveName})`
                )
              }
            }
            if (build.autoCutover === false && v.caughtUp && !waiting.has(v.perspectiveName)) {
              waiting.add(v.perspectiveName)
              yield* Effect.logInfo(
                `perspective ${v.perspectiveName} is caught up and waits for a cutover (versions.autoCutover is off): \`whizbang cutover ${v.baseName}\` serves it`
              )
            }
            if (v.historyStreams === 0) continue
            const tenth = Math.floor(v.progress * 10)
            if ((reported.get(v.perspectiveName) ?? -1) === tenth) continue
            reported.set(v.perspectiveName, tenth)
            yield* Effect.logInfo(
              `perspective ${v.perspectiveName} (${v.state}): ${Math.round(v.progress * 100)}% of its history (${v.historyStreams - v.streamsToReplay}/${v.historyStreams} streams given to the worker, ${v.pendingEvents} events pending)`
            )
          }
        })
      // A failed round (a database outage) is logged once, and once more when a round works again.
      const outages = yield* OutageLog.make("perspective version build round")
      // History written since the planner statistics of the work table were last refreshed (see Sql.analyzeBuildTables).
      let unanalyzed = 0
      let analyzedAt = 0
      const round = Effect.gen(function* () {
        // History is the replay's (`PgHistoryReplay`, composed beside this loop), never work rows.
        const r = yield* buildStep(declared, { ...build, partitionCount, history: "none" })
        unanalyzed += r.written
        const now = yield* Clock.currentTimeMillis
        if (unanalyzed >= analyzeAfterRows && now - analyzedAt >= analyzeAtMostEveryMillis) {
          yield* (yield* PgClient).query(Sql.analyzeBuildTables)
          unanalyzed = 0
          analyzedAt = now
        }
        yield* report(r.versions)
        // History left: at once again while writing; soon again while the backlog holds it back; else at `interval`.
        return r.planned === 0 ? ("idle" as const) : r.written > 0 ? ("writing" as const) : ("held" as const)
      }).pipe((attempt) => outages.guard(attempt, "idle" as const))
      const held = Duration.min(interval, Duration.millis(heldBackPauseMillis))
      const loop = Effect.gen(function* () {
        while (true) {
          const next = yield* round
          yield* next === "writing" ? Effect.yieldNow : Effect.sleep(next === "held" ? held : interval)
        }
      })
      yield* Effect.forkScoped(loop)
    })
  )
