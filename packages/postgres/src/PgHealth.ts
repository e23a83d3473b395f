/**
 * Health of a service's perspectives, for probes and dashboards: `healthy` or `degraded` with the reasons, or
 * `unhealthy` when the database cannot be asked at all.
 *
 * Degraded when any of these holds (thresholds in {@link Options}):
 * - a perspective's lag (seconds since its oldest pending event) is above `maxLag` (a version still building its
 *   history is not judged by it: the watchdog reports its progress);
 * - a perspective version cannot go on by itself (`Version`: no live instance runs it, or its dead letters keep it
 *   from going live);
 * - a cursor is Failed (more than `maxFailedCursors`);
 * - no instance has heartbeated within `heartbeatMaxAge` (or, with `instanceId`, that instance has not);
 * - the watchdog finds a (stream, perspective) stuck, with its reason.
 *
 * **When to use**: provide `PgHealth.layer(options)` and serve `PgHealth.requestListener` from `node:http`:
 *
 * ```ts
 * const listener = yield* PgHealth.requestListener
 * http.createServer(listener).listen(8080) // GET any path -> JSON report; 200 healthy, 503 otherwise
 * ```
 *
 * **Gotchas**: every check runs a few GROUP BY queries over the work and cursor tables; probe every few
 * seconds, not in a tight loop.
 *
 * @since 0.1.0
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Context, Duration, Effect, Layer } from "effect"
import * as DurationOption from "./internal/durationOption.js"
import { PgClient } from "./PgClient.js"
import { PostgresConfigError } from "./PostgresError.js"
import * as PgStatus from "./PgStatus.js"
import * as PgWatchdog from "./PgWatchdog.js"

/**
 * One reason the service is not healthy.
 *
 * @category models
 * @since 0.1.0
 */
export interface Reason {
  readonly code: "Lag" | "FailedCursors" | "NoHeartbeat" | "Stuck" | "Version" | "DatabaseUnavailable"
  readonly message: string
  readonly perspective?: string
  readonly streamId?: string
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Report {
  readonly status: "healthy" | "degraded" | "unhealthy"
  readonly reasons: ReadonlyArray<Reason>
  readonly checkedAt: string
  readonly perspectives: ReadonlyArray<PgStatus.PerspectiveSummary>
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Lag above which a perspective is unhealthy: a `Duration.Input`, finite and >= 0. Default 60 seconds. */
  readonly maxLag?: Duration.Input | undefined
  /** Failed cursors tolerated; default 0. */
  readonly maxFailedCursors?: number | undefined
  /** Default 30 seconds. `null` skips the heartbeat check (no heartbeat writer in this deployment). */
  readonly heartbeatMaxAge?: Duration.Input | null | undefined
  /** Check this instance's heartbeat instead of "any instance". */
  readonly instanceId?: string | undefined
  /** Passed to the watchdog (`stuckAfter`, `deadInstanceAfter`). */
  readonly watchdog?: PgWatchdog.Options | undefined
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  /** Never fails: a database error is reported as `unhealthy`. */
  readonly check: Effect.Effect<Report>
}

/**
 * @category services
 * @since 0.1.0
 */
export class PgHealth extends Context.Service<PgHealth, Shape>()("@whizbang/postgres/PgHealth") {}

/**
 * Judges a service schema (pure given the read-outs; exported for tests).
 *
 * @category constructors
 * @since 0.1.0
 */
export const judge = (
  input: {
    readonly perspectives: ReadonlyArray<PgStatus.PerspectiveSummary>
    readonly instances: ReadonlyArray<PgStatus.Instance>
    readonly stuck: ReadonlyArray<PgWatchdog.Stuck>
    /**
     * What the watchdog says about perspective versions (`PgWatchdog.versionFindings`): a version still building is
     * not judged by `maxLag` (its backlog is its history); one that cannot go on by itself is a reason.
     */
    readonly versions?: ReadonlyArray<PgWatchdog.VersionFinding> | undefined
  },
  options: Options = {}
): ReadonlyArray<Reason> => {
  const reasons: Array<Reason> = []
  const maxLag = Duration.toSeconds(options.maxLag ?? Duration.seconds(60))
  const building = new Set((input.versions ?? []).filter((f) => f.state === "building").map((f) => f.perspective))
  for (const p of input.perspectives) {
    if (p.pending > 0 && p.lagSeconds > maxLag && !building.has(p.perspective)) {
      reasons.push({
        code: "Lag",
        perspective: p.perspective,
        message: `${p.perspective}: oldest pending event is ${Math.round(p.lagSeconds)}s old (max ${maxLag}s), ${p.pending} pending`
      })
    }
  }
  const failed = input.perspectives.reduce((n, p) => n + p.failed, 0)
  if (failed > (options.maxFailedCursors ?? 0)) {
    const which = input.perspectives
      .filter((p) => p.failed > 0)
      .map((p) => `${p.perspective} (${p.failed})`)
      .join(", ")
    reasons.push({ code: "FailedCursors", message: `${failed} failed cursor(s): ${which}` })
  }
  if (options.heartbeatMaxAge !== null) {
    const maxAge = Duration.toSeconds(options.heartbeatMaxAge ?? Duration.seconds(30))
    const candidates =
      options.instanceId === undefined ? input.instances : input.instances.filter((i) => i.instanceId === options.instanceId)
    if (!candidates.some((i) => i.heartbeatAgeSeconds <= maxAge)) {
      const who = options.instanceId === undefined ? "no instance" : `instance ${options.instanceId}`
      reasons.push({ code: "NoHeartbeat", message: `${who} has heartbeated in the last ${maxAge}s` })
    }
  }
  for (const f of input.versions ?? []) {
    if (!PgWatchdog.isInformational(f.reason)) reasons.push({ code: "Version", perspective: f.perspective, message: f.message })
  }
  for (const s of input.stuck) {
    if (PgWatchdog.isInformational(s.reason)) continue
    reasons.push({
      code: "Stuck",
      perspective: s.perspective,
      streamId: s.streamId,
      message: `${s.perspective} stream ${s.streamId}: ${s.message}`
    })
  }
  return reasons
}

/**
 * Runs the check against the `PgClient` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const check = (options: Options = {}): Effect.Effect<Report, never, PgClient> =>
  Effect.gen(function* () {
    const perspectives = yield* PgStatus.perspectives
    const instances = yield* PgStatus.instances
    const stuck = yield* PgWatchdog.diagnose(options.watchdog)
    const versions = yield* PgWatchdog.diagnoseVersions(options.watchdog)
    const reasons = judge({ perspectives, instances, stuck, versions }, options)
    return {
      status: reasons.length === 0 ? ("healthy" as const) : ("degraded" as const),
      reasons,
      checkedAt: new Date().toISOString(),
      perspectives
    }
  }).pipe(
    Effect.catchTag("PostgresError", (e) =>
      Effect.succeed<Report>({
        status: "unhealthy",
        reasons: [{ code: "DatabaseUnavailable", message: e.message }],
        checkedAt: new Date().toISOString(),
        perspectives: []
      })
    ),
    Effect.withSpan("whizbang.health.check")
  )

/**
 * The options as {@link decodeOptions} leaves them (defaults filled); still {@link Options}, so `check` and `judge`
 * take them as they are.
 *
 * @category models
 * @since 0.5.0
 */
export interface Decoded {
  readonly maxLag: Duration.Duration
  readonly maxFailedCursors: number
  readonly heartbeatMaxAge: Duration.Duration | null
  readonly instanceId?: string | undefined
  readonly watchdog: PgWatchdog.Decoded
}

/**
 * Checks the options: `maxLag` a finite duration >= 0, `heartbeatMaxAge` a finite, positive duration or `null`,
 * `maxFailedCursors` an integer >= 0, and the watchdog's (`PgWatchdog.decodeOptions`); anything else is a
 * `PostgresConfigError` naming the option after `prefix` (`Whizbang.layer`'s `health.`).
 *
 * @category constructors
 * @since 0.5.0
 */
export const decodeOptions = (options: Options = {}, prefix = ""): Effect.Effect<Decoded, PostgresConfigError> =>
  Effect.gen(function* () {
    const maxLag = yield* DurationOption.decode(`${prefix}maxLag`, options.maxLag, "nonNegative", Duration.seconds(60))
    const heartbeatMaxAge =
      options.heartbeatMaxAge === null
        ? null
        : yield* DurationOption.decode(`${prefix}heartbeatMaxAge`, options.heartbeatMaxAge, "positive", Duration.seconds(30))
    const maxFailedCursors = options.maxFailedCursors ?? 0
    if (!(Number.isSafeInteger(maxFailedCursors) && maxFailedCursors >= 0)) {
      return yield* new PostgresConfigError({
        option: `${prefix}maxFailedCursors`,
        message: `${prefix}maxFailedCursors must be an integer >= 0, got ${maxFailedCursors}`
      })
    }
    const watchdog = yield* PgWatchdog.decodeOptions(options.watchdog, `${prefix}watchdog.`)
    return { maxLag, maxFailedCursors, heartbeatMaxAge, instanceId: options.instanceId, watchdog }
  })

/**
 * The health check service; its options are checked when the layer is built ({@link decodeOptions}).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options = {}): Layer.Layer<PgHealth, PostgresConfigError, PgClient> =>
  Layer.unwrap(Effect.map(decodeOptions(options), layerDecoded))

/**
 * {@link layer} for options {@link decodeOptions} checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerDecoded = (options: Decoded): Layer.Layer<PgHealth, never, PgClient> =>
  Layer.effect(
    PgHealth,
    Effect.map(Effect.service(PgClient), (client) => PgHealth.of({ check: check(options).pipe(Effect.provideService(PgClient, client)) }))
  )

/**
 * A `node:http` request listener answering every request with the JSON report: 200 when healthy, 503 otherwise.
 *
 * @category constructors
 * @since 0.1.0
 */
export const requestListener: Effect.Effect<(request: IncomingMessage, response: ServerResponse) => void, never, PgHealth> = Effect.map(
  Effect.service(PgHealth),
  (health) => (_request, response) => {
    void Effect.runPromise(health.check).then((report) => {
      const body = JSON.stringify(report)
      response.writeHead(report.status === "healthy" ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" })
      response.end(body)
    })
  }
)
