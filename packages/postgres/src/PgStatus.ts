/**
 * A snapshot of how a service schema is doing: per perspective the streams (cursors), pending work, lag in
 * events and in seconds since the oldest pending event, failed cursors and dead letters; the instances with
 * their heartbeat age and perspective set; the held stream locks; every pair blocked now and why (`waiting`: a
 * retry backoff until T, a rewind debounce, a stream lock held by X for reason R, no live instance running the
 * perspective); what the watchdog finds stuck; and each perspective version with its state, build progress and lag,
 * with what the watchdog says about it. `whizbang status` prints it, `PgHealth` judges it.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Metric } from "effect"
import { PgClient } from "./PgClient.js"
import type * as PgPerspectiveVersions from "./PgPerspectiveVersions.js"
import * as PgWatchdog from "./PgWatchdog.js"
import type { PostgresError } from "./PostgresError.js"
import * as Sql from "./sql/status.js"

/**
 * @category models
 * @since 0.1.0
 */
export interface PerspectiveSummary {
  readonly perspective: string
  /** Cursors, one per stream the perspective has seen. */
  readonly streams: number
  /** Pending work rows: the lag in events. */
  readonly pending: number
  readonly pendingStreams: number
  /** Seconds since the oldest pending event was appended; 0 with nothing pending. */
  readonly lagSeconds: number
  readonly failed: number
  readonly rewindRequired: number
  readonly deadLetters: number
  /**
   * Live instances that run this perspective. 0 with live instances present: its work waits for an instance that
   * runs it (a rolling deploy), and is never dead-lettered for that.
   */
  readonly runningInstances: number
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Instance {
  readonly instanceId: string
  readonly serviceName: string
  readonly hostName: string
  readonly processId: number
  readonly startedAt: string
  readonly heartbeatAgeSeconds: number
  /** The perspectives it runs; `null` when not recorded (taken as every perspective). */
  readonly perspectives: ReadonlyArray<string> | null
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Lock {
  readonly streamId: string
  readonly perspective: string
  readonly instanceId: string
  readonly reason: string | null
  readonly expiresAt: string | null
  readonly expired: boolean
}

/**
 * Where events' end-of-processing lifecycles stand: `pending`, events whose `PostAllPerspectives` /
 * `PostLifecycle` stages wait for the last perspective; `deadLetteredEvents`, events a perspective dead-lettered —
 * their lifecycle ended in the `DeadLettered` stage, never reported as a success.
 *
 * @category models
 * @since 0.2.0
 */
export interface Lifecycles {
  readonly pending: number
  readonly deadLetteredEvents: number
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Snapshot {
  readonly schema: string
  readonly takenAt: string
  readonly perspectives: ReadonlyArray<PerspectiveSummary>
  readonly instances: ReadonlyArray<Instance>
  readonly locks: ReadonlyArray<Lock>
  readonly lifecycles: Lifecycles
  /** Every pending pair that cannot move now, whatever its age, with why (`PgWatchdog.blocked`). */
  readonly waiting: ReadonlyArray<PgWatchdog.Stuck>
  readonly stuck: ReadonlyArray<PgWatchdog.Stuck>
  /** Every registered perspective version (empty on a schema without the versions registry). @since 0.3.0 */
  readonly versions: ReadonlyArray<PgPerspectiveVersions.VersionInfo>
  /** Versions the watchdog names: no live instance runs it, or it is building (`PgWatchdog.diagnoseVersions`). @since 0.3.0 */
  readonly versionFindings: ReadonlyArray<PgWatchdog.VersionFinding>
}

/**
 * Pending work rows per perspective, as of the last snapshot.
 *
 * @category metrics
 * @since 0.1.0
 */
export const lagEventsGauge = Metric.gauge("whizbang_lag_events", { description: "pending work rows" })

/**
 * Seconds since the oldest pending event per perspective, as of the last snapshot.
 *
 * @category metrics
 * @since 0.1.0
 */
export const lagSecondsGauge = Metric.gauge("whizbang_lag_seconds", { description: "seconds since the oldest pending event" })

/**
 * The perspective summaries alone (cheaper than a whole snapshot); updates the lag gauges.
 *
 * @category constructors
 * @since 0.1.0
 */
export const perspectives: Effect.Effect<ReadonlyArray<PerspectiveSummary>, PostgresError, PgClient> = Effect.gen(function* () {
  const summaries = yield* PgClient.use((client) => Sql.perspectives(client, { deadInstanceAfterSeconds: 30 }))
  for (const s of summaries) {
    const attributes = { perspective: s.perspective }
    yield* Metric.update(Metric.withAttributes(lagEventsGauge, attributes), s.pending)
    yield* Metric.update(Metric.withAttributes(lagSecondsGauge, attributes), s.lagSeconds)
  }
  return summaries
})

/**
 * Every registered instance with its heartbeat age.
 *
 * @category constructors
 * @since 0.1.0
 */
export const instances: Effect.Effect<ReadonlyArray<Instance>, PostgresError, PgClient> = Effect.map(
  PgClient.use((client) => Sql.instances(client)),
  (rows) =>
    rows.map(
      (r): Instance => ({
        instanceId: r.instanceId,
        serviceName: r.serviceName,
        hostName: r.hostName,
        processId: r.processId,
        startedAt: r.startedAt.toISOString(),
        heartbeatAgeSeconds: r.heartbeatAgeSeconds,
        perspectives: r.perspectiveNames
      })
    )
)

/**
 * Every cursor carrying a stream lock, expired ones included (flagged).
 *
 * @category constructors
 * @since 0.1.0
 */
export const locks: Effect.Effect<ReadonlyArray<Lock>, PostgresError, PgClient> = Effect.map(
  PgClient.use((client) => Sql.locks(client)),
  (rows) => rows.map((r): Lock => ({ ...r, expiresAt: r.expiresAt === null ? null : r.expiresAt.toISOString() }))
)

/**
 * Lifecycle counts (see {@link Lifecycles}).
 *
 * @category constructors
 * @since 0.2.0
 */
export const lifecycles: Effect.Effect<Lifecycles, PostgresError, PgClient> = PgClient.use((client) => Sql.lifecycles(client))

/**
 * The whole snapshot. `watchdog` options tune what counts as stuck (default: 30 s without progress).
 *
 * @category constructors
 * @since 0.1.0
 */
export const snapshot = (options: { readonly watchdog?: PgWatchdog.Options } = {}): Effect.Effect<Snapshot, PostgresError, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const deadInstanceAfter = Duration.toSeconds(options.watchdog?.deadInstanceAfter ?? Duration.seconds(30))
    const running = yield* instances
    const versions = yield* PgWatchdog.registeredVersions(options.watchdog ?? {})
    return {
      schema: client.schema,
      takenAt: new Date().toISOString(),
      perspectives: yield* perspectives,
      instances: running,
      locks: yield* locks,
      lifecycles: yield* lifecycles,
      waiting: yield* PgWatchdog.blocked(options.watchdog ?? {}),
      stuck: yield* PgWatchdog.diagnose({ stuckAfter: Duration.seconds(30), ...options.watchdog }),
      versions,
      versionFindings: PgWatchdog.versionFindings(versions, running.filter((i) => i.heartbeatAgeSeconds < deadInstanceAfter).length)
    }
  })
