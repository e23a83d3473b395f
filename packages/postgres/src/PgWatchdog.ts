/**
 * The watchdog: finds every (stream, perspective) that has not advanced while work is pending, and says why.
 *
 * A pair is stuck when its oldest pending work row is older than `stuckAfter` and its cursor has not moved in
 * that time. The reason is the first that applies, in this order:
 *
 * | reason | meaning |
 * |---|---|
 * | `StreamLocked` | a live stream lock (rewind, bootstrap, purge) pauses normal processing |
 * | `NoInstanceRunsVersion` | the same for one version of a perspective with several (`balance__v2` while only instances of the release before run): its work waits for one that runs it |
 * | `NoInstanceRunsPerspective` | live instances exist, but none runs this perspective (a rolling deploy): the work waits for one that does; when no release registered the perspective either (a misspelled or removed one), the message says so and names `whizbang work remove`, which removes such work; a registered one removed from the code: `whizbang retire` |
 * | `LeaseHeldByDeadInstance` | the stream's lease is live but its holder's heartbeat is stale or missing; it frees at lease expiry |
 * | `FailingEvent` | the head event failed `attempts` times; it is retried after `backoffUntil`, then dead-lettered |
 * | `RewindPending` | the cursor is flagged RewindRequired (a late arrival) and waits out the rewind debounce, or for a worker to rewind it |
 * | `VersionHasDeadLetters` | a version still building dead-lettered events: it never goes live until they are retried or discarded (`whizbang dead-letters`) |
 * | `VersionBuilding` | informational: the pair belongs to a version still replaying its history, whose backlog is expected (`PgHealth` ignores it) |
 * | `LeaseHeldByLiveInstance` | a live instance holds the lease but does not commit (slow apply, hung fiber) |
 * | `NotClaimed` | nobody holds the lease: no live worker handles this perspective, or all are saturated |
 *
 * {@link diagnoseVersions} says the same per perspective version, pairs or not (a version whose planned history waits
 * has no work rows yet): `NoInstanceRunsVersion` when no live instance runs it, else `VersionHasDeadLetters` or
 * `VersionBuilding` with its progress.
 *
 * **When to use**: `PgWatchdog.layer()` in a service that runs workers: it logs a warning per stuck pair every
 * `interval` and keeps the lag gauges current. `PgHealth` and `whizbang status` call `diagnose` directly.
 *
 * **Gotchas**: an instance is alive when `wh_service_instances` has a heartbeat newer than `deadInstanceAfter`;
 * an instance that never heartbeats counts as dead (`heartbeatAgeSeconds: null`).
 *
 * @since 0.1.0
 */
import { OutageLog } from "@whizbang/core/internal"
import { Context, Duration, Effect, Layer, Metric, Schedule } from "effect"
import { PgClient } from "./PgClient.js"
import * as PgPerspectiveVersions from "./PgPerspectiveVersions.js"
import * as DurationOption from "./internal/durationOption.js"
import { PostgresConfigError, type PostgresError } from "./PostgresError.js"
import * as Registry from "./sql/registry.js"
import * as Sql from "./sql/watchdog.js"

/**
 * Why a (stream, perspective) is not advancing.
 *
 * @category models
 * @since 0.1.0
 */
export type Reason =
  | { readonly _tag: "StreamLocked"; readonly instanceId: string; readonly lockReason: string | null; readonly until: string }
  | { readonly _tag: "NoInstanceRunsPerspective"; readonly perspective: string; readonly liveInstances: number }
  | {
      readonly _tag: "NoInstanceRunsVersion"
      /** The version's key (`balance__v2`). */
      readonly perspective: string
      readonly baseName: string
      readonly version: number
      readonly state: PgPerspectiveVersions.State
      readonly liveInstances: number
    }
  | {
      readonly _tag: "VersionHasDeadLetters"
      readonly perspective: string
      readonly baseName: string
      readonly version: number
      readonly deadLetters: number
    }
  | {
      readonly _tag: "VersionBuilding"
      readonly perspective: string
      readonly baseName: string
      readonly version: number
      /** Share of its history applied, 0..1. */
      readonly progress: number
    }
  | {
      readonly _tag: "LeaseHeldByDeadInstance"
      readonly instanceId: string
      readonly leaseUntil: string
      readonly heartbeatAgeSeconds: number | null
    }
  | {
      readonly _tag: "FailingEvent"
      readonly eventId: string
      readonly attempts: number
      readonly error: string | null
      readonly backoffUntil: string | null
    }
  | { readonly _tag: "RewindPending"; readonly flaggedAt: string | null; readonly firstFlaggedAt: string | null }
  | {
      readonly _tag: "LeaseHeldByLiveInstance"
      readonly instanceId: string
      readonly leaseUntil: string
      readonly heartbeatAgeSeconds: number
    }
  | { readonly _tag: "NotClaimed"; readonly liveInstances: number }

/**
 * One stuck (stream, perspective).
 *
 * @category models
 * @since 0.1.0
 */
export interface Stuck {
  readonly streamId: string
  readonly perspective: string
  readonly pending: number
  /** The lowest pending event id: where the pair is stopped. */
  readonly headEventId: string
  /** Seconds since the head work row was enqueued. */
  readonly waitingSeconds: number
  readonly reason: Reason
  /** The reason in one sentence, for logs and tables. */
  readonly message: string
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Pending this long with no cursor progress counts as stuck; default 30 seconds. */
  readonly stuckAfter?: Duration.Input | undefined
  /** A heartbeat older than this means the instance is dead; default 30 seconds (the workers' `abandonStaleInstanceThreshold`). */
  readonly deadInstanceAfter?: Duration.Input | undefined
  /** At most this many pairs are reported (oldest first); default 100. */
  readonly limit?: number | undefined
}

/**
 * Options of {@link layer}: {@link Options} and the period of the background diagnosis.
 *
 * @category models
 * @since 0.5.0
 */
export interface LayerOptions extends Options {
  /** Diagnose every `interval` (default 30 seconds; a finite, positive duration); `null`: only on demand. */
  readonly interval?: Duration.Input | null | undefined
}

/**
 * The options as {@link decodeOptions} leaves them (defaults filled).
 *
 * @category models
 * @since 0.5.0
 */
export interface Decoded {
  readonly stuckAfter: Duration.Duration
  readonly deadInstanceAfter: Duration.Duration
  readonly limit: number
  readonly interval: Duration.Duration | null
}

/**
 * Checks the options: `stuckAfter`, `deadInstanceAfter` and `interval` finite, positive durations (`interval` may be
 * `null`), `limit` an integer >= 1; anything else is a `PostgresConfigError` naming the option after `prefix`
 * (`Whizbang.layer`'s `watchdog.`).
 *
 * @category constructors
 * @since 0.5.0
 */
export const decodeOptions = (options: LayerOptions = {}, prefix = ""): Effect.Effect<Decoded, PostgresConfigError> =>
  Effect.gen(function* () {
    const stuckAfter = yield* DurationOption.decode(`${prefix}stuckAfter`, options.stuckAfter, "positive", Duration.seconds(30))
    const deadInstanceAfter = yield* DurationOption.decode(
      `${prefix}deadInstanceAfter`,
      options.deadInstanceAfter,
      "positive",
      Duration.seconds(30)
    )
    const limit = options.limit ?? 100
    if (!(Number.isSafeInteger(limit) && limit >= 1)) {
      return yield* new PostgresConfigError({ option: `${prefix}limit`, message: `${prefix}limit must be an integer >= 1, got ${limit}` })
    }
    const interval =
      options.interval === null
        ? null
        : yield* DurationOption.decode(`${prefix}interval`, options.interval, "positive", Duration.seconds(30))
    return { stuckAfter, deadInstanceAfter, limit, interval }
  })

/**
 * One row of the diagnosis query.
 *
 * @category models
 * @since 0.1.0
 */
export interface Row {
  readonly stream_id: string
  readonly perspective_name: string
  readonly pending: number
  readonly event_id: string
  readonly attempts: number
  readonly error: string | null
  readonly scheduled_for: Date | null
  readonly backing_off: boolean
  readonly waiting_seconds: number
  readonly cursor_status: number | null
  readonly rewind_flagged_at: Date | null
  readonly rewind_first_flagged_at: Date | null
  readonly stream_lock_instance_id: string | null
  readonly stream_lock_reason: string | null
  readonly stream_lock_expiry: Date | null
  readonly lease_instance_id: string | null
  readonly lease_expiry: Date | null
  readonly lease_instance_known: boolean
  readonly lease_heartbeat_age_seconds: number | null
  readonly instances: number
  /** Live instances that run the pair's perspective. */
  readonly runners: number
}

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString())
const RewindRequired = 32

// Work of a perspective no release registered (a misspelled name, a perspective removed from the code) waits for good.
const orphaned = (perspective: string) =>
  `; no release registered "${perspective}" either (misspelled, or removed from the code?): nothing will apply this work — ` +
  `see it with whizbang work list, remove it with whizbang work remove ${perspective}`

const describe = (reason: Reason): string => {
  switch (reason._tag) {
    case "StreamLocked":
      return `stream lock held by instance ${reason.instanceId} (${reason.lockReason ?? "no reason"}) until ${reason.until}`
    case "LeaseHeldByDeadInstance":
      return `lease held by dead instance ${reason.instanceId} (${reason.heartbeatAgeSeconds === null ? "no heartbeat" : `last heartbeat ${Math.round(reason.heartbeatAgeSeconds)}s ago`}) until ${reason.leaseUntil}`
    case "FailingEvent":
      return `event ${reason.eventId} failed ${reason.attempts} time(s)${reason.backoffUntil === null ? "" : `, retry after ${reason.backoffUntil}`}: ${reason.error ?? "unknown error"}`
    case "NoInstanceRunsPerspective":
      return `no live instance runs perspective "${reason.perspective}" (${reason.liveInstances} live instance(s) run others); the work waits for one that does`
    case "NoInstanceRunsVersion":
      return `no live instance runs version ${reason.version} of perspective "${reason.baseName}" (${reason.perspective}, ${reason.state}; ${reason.liveInstances} live instance(s) run others): its work waits for an instance of a release that declares it (a rolling deploy)`
    case "VersionHasDeadLetters":
      return `version ${reason.version} of perspective "${reason.baseName}" (${reason.perspective}) dead-lettered ${reason.deadLetters} event(s): it does not go live until they are retried or discarded (whizbang dead-letters list -p ${reason.perspective})`
    case "VersionBuilding":
      return `version ${reason.version} of perspective "${reason.baseName}" (${reason.perspective}) is building: ${Math.round(reason.progress * 100)}% of its history applied`
    case "RewindPending":
      return `cursor flagged RewindRequired by a late arrival${reason.flaggedAt === null ? "" : ` (last at ${reason.flaggedAt}${reason.firstFlaggedAt === null ? "" : `, first flagged at ${reason.firstFlaggedAt}`})`}; waiting out the rewind debounce or for a worker to rewind it`
    case "LeaseHeldByLiveInstance":
      return `lease held by live instance ${reason.instanceId} until ${reason.leaseUntil}, but it is not committing (slow or hung apply?)`
    case "NotClaimed":
      return reason.liveInstances === 0 ? "not claimed: no live instance" : `not claimed by any of ${reason.liveInstances} live instance(s)`
  }
}

const noRunner = (v: PgPerspectiveVersions.VersionInfo, liveInstances: number): Reason => ({
  _tag: "NoInstanceRunsVersion",
  perspective: v.perspectiveName,
  baseName: v.baseName,
  version: v.version,
  state: v.state,
  liveInstances
})

/** A building version: held back by its dead letters, else just building. */
const building = (v: PgPerspectiveVersions.VersionInfo): Reason =>
  v.deadLetters > 0
    ? {
        _tag: "VersionHasDeadLetters",
        perspective: v.perspectiveName,
        baseName: v.baseName,
        version: v.version,
        deadLetters: v.deadLetters
      }
    : { _tag: "VersionBuilding", perspective: v.perspectiveName, baseName: v.baseName, version: v.version, progress: v.progress }

/**
 * Classifies one diagnosis row (pure; the precedence is the table in the module docs).
 *
 * @category constructors
 * @since 0.1.0
 */
export const classify = (
  row: Row,
  options: {
    readonly deadInstanceAfterSeconds: number
    readonly liveInstances: number
    /** The registered perspective versions (`PgPerspectiveVersions.list`): names the version reasons. */
    readonly versions?: ReadonlyArray<PgPerspectiveVersions.VersionInfo> | undefined
  }
): Stuck => {
  const alive = row.lease_heartbeat_age_seconds !== null && row.lease_heartbeat_age_seconds <= options.deadInstanceAfterSeconds
  const versions = options.versions ?? []
  const version = versions.find((v) => v.perspectiveName === row.perspective_name)
  // A perspective with one version is named as a perspective; a version of one with several, as a version.
  const versioned =
    version !== undefined &&
    (version.version > 1 || versions.some((v) => v.baseName === version.baseName && v.perspectiveName !== version.perspectiveName))
  const lockLive =
    row.stream_lock_instance_id !== null && (row.stream_lock_expiry === null || new Date(row.stream_lock_expiry).getTime() > Date.now())
  const reason: Reason = lockLive
    ? {
        _tag: "StreamLocked",
        instanceId: row.stream_lock_instance_id!,
        lockReason: row.stream_lock_reason,
        until: iso(row.stream_lock_expiry) ?? "forever"
      }
    : options.liveInstances > 0 && row.runners === 0
      ? versioned
        ? noRunner(version, options.liveInstances)
        : { _tag: "NoInstanceRunsPerspective", perspective: row.perspective_name, liveInstances: options.liveInstances }
      : row.lease_instance_id !== null && !alive
        ? {
            _tag: "LeaseHeldByDeadInstance",
            instanceId: row.lease_instance_id,
            leaseUntil: iso(row.lease_expiry)!,
            heartbeatAgeSeconds: row.lease_heartbeat_age_seconds
          }
        : row.attempts > 0
          ? {
              _tag: "FailingEvent",
              eventId: row.event_id,
              attempts: row.attempts,
              error: row.error,
              backoffUntil: row.backing_off ? iso(row.scheduled_for) : null
            }
          : row.cursor_status !== null && (row.cursor_status & RewindRequired) !== 0
            ? { _tag: "RewindPending", flaggedAt: iso(row.rewind_flagged_at), firstFlaggedAt: iso(row.rewind_first_flagged_at) }
            : version?.state === "building"
              ? building(version)
              : row.lease_instance_id !== null
                ? {
                    _tag: "LeaseHeldByLiveInstance",
                    instanceId: row.lease_instance_id,
                    leaseUntil: iso(row.lease_expiry)!,
                    heartbeatAgeSeconds: row.lease_heartbeat_age_seconds!
                  }
                : { _tag: "NotClaimed", liveInstances: options.liveInstances }
  return {
    streamId: row.stream_id,
    perspective: row.perspective_name,
    pending: row.pending,
    headEventId: row.event_id,
    waitingSeconds: row.waiting_seconds,
    reason,
    message:
      reason._tag !== "NoInstanceRunsPerspective"
        ? describe(reason)
        : versions.length > 0 && version === undefined
          ? describe(reason) + orphaned(reason.perspective)
          : `${describe(reason)} (removed from the code? whizbang retire ${reason.perspective} stops routing to it)`
  }
}

/**
 * Stuck pairs found by the watchdog's last diagnosis (set by {@link layer}'s loop).
 *
 * @category metrics
 * @since 0.1.0
 */
export const stuckGauge = Metric.gauge("whizbang_stuck_streams", { description: "(stream, perspective) pairs pending without progress" })

/**
 * Stuck pairs waiting on a held stream lock ("lock waits").
 *
 * @category metrics
 * @since 0.1.0
 */
export const lockWaitsGauge = Metric.gauge("whizbang_lock_waits", {
  description: "(stream, perspective) pairs waiting on a held stream lock"
})

/**
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  readonly diagnose: Effect.Effect<ReadonlyArray<Stuck>, PostgresError>
}

/**
 * @category services
 * @since 0.1.0
 */
export class PgWatchdog extends Context.Service<PgWatchdog, Shape>()("@whizbang/postgres/PgWatchdog") {}

/**
 * The diagnosis against the `PgClient` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const diagnose = (options: Options = {}): Effect.Effect<ReadonlyArray<Stuck>, PostgresError, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const stuckAfter = Duration.toSeconds(options.stuckAfter ?? Duration.seconds(30))
    const deadInstanceAfterSeconds = Duration.toSeconds(options.deadInstanceAfter ?? Duration.seconds(30))
    const rows = yield* Sql.diagnose(client, { stuckAfterSeconds: stuckAfter, limit: options.limit ?? 100, deadInstanceAfterSeconds })
    if (rows.length === 0) return []
    const liveInstances = yield* countLive(client, deadInstanceAfterSeconds)
    const versions = yield* versionsRegistered(deadInstanceAfterSeconds)
    return rows.map((row) => classify(row, { deadInstanceAfterSeconds, liveInstances, versions }))
  }).pipe(Effect.withSpan("whizbang.watchdog.diagnose"))

const countLive = (client: PgClient["Service"], deadInstanceAfterSeconds: number) =>
  Effect.map(Sql.countLive(client, { deadInstanceAfterSeconds }), (row) => row.n)

const versionsRegistered = (deadInstanceAfterSeconds: number) =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const registry = yield* Registry.hasRegistry(client)
    if (!registry.present) return []
    return yield* PgPerspectiveVersions.listWith({ deadInstanceAfter: Duration.seconds(deadInstanceAfterSeconds) })
  })

/**
 * `PgPerspectiveVersions.listWith` judging instances by `deadInstanceAfter` (default 30 seconds); empty on a schema
 * migrated before versions existed (no registry), so status and the watchdog work on it.
 *
 * @category constructors
 * @since 0.3.0
 */
export const registeredVersions = (
  options: Pick<Options, "deadInstanceAfter"> = {}
): Effect.Effect<ReadonlyArray<PgPerspectiveVersions.VersionInfo>, PostgresError, PgClient> =>
  versionsRegistered(Duration.toSeconds(options.deadInstanceAfter ?? Duration.seconds(30)))

/**
 * What the watchdog says about one perspective version (see {@link diagnoseVersions}).
 *
 * @category models
 * @since 0.3.0
 */
export interface VersionFinding {
  readonly perspective: string
  readonly baseName: string
  readonly version: number
  readonly state: PgPerspectiveVersions.State
  readonly reason: Extract<Reason, { readonly _tag: "NoInstanceRunsVersion" | "VersionHasDeadLetters" | "VersionBuilding" }>
  readonly message: string
}

/**
 * What the watchdog says about these versions (pure): per version not retired, `NoInstanceRunsVersion` when it has
 * work or history waiting and no live instance runs it (while some instance is live: a rolling deploy), else
 * `VersionHasDeadLetters` while it is building with dead letters (it would never go live), else `VersionBuilding` with
 * its progress while it is building. Versions that are fine are left out.
 *
 * @category constructors
 * @since 0.3.0
 */
export const versionFindings = (
  versions: ReadonlyArray<PgPerspectiveVersions.VersionInfo>,
  liveInstances: number
): ReadonlyArray<VersionFinding> =>
  versions.flatMap((v): Array<VersionFinding> => {
    if (v.state === "retired") return []
    const waiting = v.pendingEvents > 0 || v.streamsToReplay > 0
    const reason =
      !v.hasRunner && liveInstances > 0 && waiting ? noRunner(v, liveInstances) : v.state === "building" ? building(v) : undefined
    if (reason === undefined) return []
    return [
      {
        perspective: v.perspectiveName,
        baseName: v.baseName,
        version: v.version,
        state: v.state,
        reason: reason as VersionFinding["reason"],
        message: describe(reason)
      }
    ]
  })

/**
 * {@link versionFindings} of the registered versions (empty without the versions registry, migration 0005).
 *
 * @category constructors
 * @since 0.3.0
 */
export const diagnoseVersions = (
  options: Pick<Options, "deadInstanceAfter"> = {}
): Effect.Effect<ReadonlyArray<VersionFinding>, PostgresError, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const deadInstanceAfterSeconds = Duration.toSeconds(options.deadInstanceAfter ?? Duration.seconds(30))
    const versions = yield* versionsRegistered(deadInstanceAfterSeconds)
    if (versions.length === 0) return []
    return versionFindings(versions, yield* countLive(client, deadInstanceAfterSeconds))
  }).pipe(Effect.withSpan("whizbang.watchdog.diagnose_versions"))

const blockingTags: ReadonlySet<Reason["_tag"]> = new Set([
  "StreamLocked",
  "NoInstanceRunsPerspective",
  "NoInstanceRunsVersion",
  "VersionHasDeadLetters",
  "RewindPending"
])

/**
 * Whether a reason means the pair cannot move now whatever the workers do (a stream lock, no instance running the
 * perspective, a retry backoff, a rewind debounce) — as opposed to a slow or dead holder.
 *
 * @category predicates
 * @since 0.1.0
 */
export const isBlocked = (reason: Reason): boolean =>
  blockingTags.has(reason._tag) || (reason._tag === "FailingEvent" && reason.backoffUntil !== null)

/**
 * Every pending (stream, perspective) that is blocked right now, whatever its age, with why: what `PgStatus`
 * shows as waiting. Workers do not claim such pairs until they can move (see `PgWorkCoordinator`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const blocked = (options: Omit<Options, "stuckAfter"> = {}): Effect.Effect<ReadonlyArray<Stuck>, PostgresError, PgClient> =>
  Effect.map(diagnose({ ...options, stuckAfter: Duration.zero }), (pairs) => pairs.filter((p) => isBlocked(p.reason)))

/**
 * Whether a reason only informs (a version building its history has an expected backlog): `PgHealth` does not count
 * it against the service.
 *
 * @category predicates
 * @since 0.3.0
 */
export const isInformational = (reason: Reason): boolean => reason._tag === "VersionBuilding"

/**
 * Logs one warning per stuck pair, annotated with its stream id, perspective and head event id.
 *
 * @category constructors
 * @since 0.1.0
 */
export const logStuck = (stuck: ReadonlyArray<Stuck>): Effect.Effect<void> =>
  Effect.gen(function* () {
    yield* Metric.update(stuckGauge, stuck.length)
    yield* Metric.update(lockWaitsGauge, stuck.filter((s) => s.reason._tag === "StreamLocked").length)
    for (const s of stuck) {
      yield* Effect.logWarning(`stuck for ${Math.round(s.waitingSeconds)}s with ${s.pending} pending: ${s.message}`).pipe(
        Effect.annotateLogs({
          "whizbang.stream_id": s.streamId,
          "whizbang.perspective": s.perspective,
          "whizbang.event_id": s.headEventId,
          "whizbang.stuck_reason": s.reason._tag
        })
      )
    }
  })

/**
 * Logs each version finding: a warning when no live instance runs the version, an info line while it builds.
 *
 * @category constructors
 * @since 0.3.0
 */
export const logVersions = (findings: ReadonlyArray<VersionFinding>): Effect.Effect<void> =>
  Effect.forEach(
    findings,
    (f) =>
      (f.reason._tag === "VersionBuilding" ? Effect.logInfo(f.message) : Effect.logWarning(f.message)).pipe(
        Effect.annotateLogs({ "whizbang.perspective": f.perspective, "whizbang.stuck_reason": f.reason._tag })
      ),
    { discard: true }
  )

/**
 * The watchdog service; unless `interval` is `null` it also diagnoses every `interval` (default 30 seconds) in
 * a fiber of the layer's scope, logs what is stuck and updates the gauges. A failed diagnosis is logged and retried.
 * The options are checked first ({@link decodeOptions}).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: LayerOptions = {}): Layer.Layer<PgWatchdog, PostgresConfigError, PgClient> =>
  Layer.unwrap(Effect.map(decodeOptions(options), layerDecoded))

/**
 * {@link layer} for options {@link decodeOptions} checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerDecoded = (options: Decoded): Layer.Layer<PgWatchdog, never, PgClient> =>
  Layer.effect(
    PgWatchdog,
    Effect.gen(function* () {
      const client = yield* PgClient
      const run = diagnose(options).pipe(Effect.provideService(PgClient, client))
      const versions = diagnoseVersions(options).pipe(Effect.provideService(PgClient, client))
      if (options.interval !== null) {
        const outages = yield* OutageLog.make("watchdog diagnosis")
        const loop = run.pipe(
          Effect.flatMap(logStuck),
          Effect.andThen(Effect.flatMap(versions, logVersions)),
          (round) => outages.guard(round, undefined),
          Effect.repeat(Schedule.spaced(options.interval))
        )
        yield* Effect.forkScoped(loop)
      }
      return PgWatchdog.of({ diagnose: run })
    })
  )
