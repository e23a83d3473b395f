// Every option of every layer Whizbang.layer composes, checked before anything connects: the client builds and
// migrations run first in the composition, so a check left to a later layer would refuse the start only after
// the schema had been migrated.
import { DurationOption, EventId, PerspectiveWorker } from "@whizbang/core"
import { PgClient, PgPerspectiveSnapshots, PgPerspectiveVersions, PgQueueVacuum, PostgresError } from "@whizbang/postgres"
import { PerspectiveStreamLockOptions, StreamLockError } from "@whizbang/stream-locker"
import { TrackedEventTypeRegistry } from "@whizbang/sync"
import { Duration, Effect, Result } from "effect"
import type { Config, Errors } from "../Whizbang.js"

const configError = (option: string, rule: string, value: unknown) =>
  Effect.fail(new PostgresError.PostgresConfigError({ option, message: `${option} ${rule}, got ${show(value)}` }))

const show = (value: unknown): string => (typeof value === "number" ? String(value) : (JSON.stringify(value) ?? String(value)))

const finite = (option: string, value: unknown, rule: { readonly min: number; readonly integer?: boolean }) =>
  value === undefined ||
  (typeof value === "number" && Number.isFinite(value) && value >= rule.min && (rule.integer !== true || Number.isSafeInteger(value)))
    ? Effect.void
    : configError(option, `must be a${rule.integer === true ? "n integer" : " finite number"} >= ${rule.min}`, value)

const isDuration = (value: Duration.Input) => Result.isSuccess(DurationOption.check(value, "positive"))

// A duration option by its `DurationOption` rule; the decoded value, or `fallback` when absent (or null where allowed).
const duration = (
  option: string,
  value: Duration.Input | null | undefined,
  rule: DurationOption.Rule,
  fallback: Duration.Duration,
  nullable = false
): Effect.Effect<Duration.Duration, PostgresError.PostgresConfigError> =>
  value === undefined || (value === null && nullable)
    ? Effect.succeed(fallback)
    : Result.match(DurationOption.check(value, rule), {
        onSuccess: Effect.succeed,
        onFailure: (message) =>
          Effect.fail(new PostgresError.PostgresConfigError({ option, message: `${option} ${message}${nullable ? " (or null)" : ""}` }))
      })

const rebuildDuration = (option: string, value: Duration.Input | undefined) =>
  value === undefined || isDuration(value)
    ? Effect.void
    : Effect.fail(new StreamLockError.InvalidRebuildOptions({ option, rule: "must be a finite, positive duration", value: show(value) }))

const name = (option: string, value: unknown) =>
  value === undefined || (typeof value === "string" && value.trim().length > 0)
    ? Effect.void
    : configError(option, "must be a non-empty string", value)

/** The application name shown in `pg_stat_activity`: the service name unless given. */
export const applicationName = (config: Config): string => config.applicationName ?? config.serviceName ?? "whizbang"

export const validate = (config: Config): Effect.Effect<void, Errors> =>
  Effect.gen(function* () {
    yield* PgClient.decodeOptions(
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
    yield* name("serviceName", config.serviceName)
    if (config.instanceId !== undefined && !EventId.isUuid(config.instanceId)) {
      return yield* configError("instanceId", "must be a UUID", config.instanceId)
    }
    yield* PerspectiveWorker.validate(config)
    yield* PgPerspectiveVersions.decodeOptions(config.versions)
    const backoff = config.failureBackoff
    if (backoff !== undefined) {
      const initial = yield* duration("failureBackoff.initial", backoff.initial, "positive", Duration.seconds(1))
      yield* finite("failureBackoff.multiplier", backoff.multiplier, { min: 1 })
      const max = yield* duration("failureBackoff.max", backoff.max, "positive", Duration.seconds(60))
      if (Duration.isLessThan(max, initial)) {
        return yield* configError(
          "failureBackoff.max",
          `must be >= failureBackoff.initial (${Duration.format(initial)})`,
          Duration.format(max)
        )
      }
    }
    yield* duration("affinityGrace", config.affinityGrace, "nonNegative", Duration.zero)
    yield* duration("registry.heartbeatInterval", config.registry?.heartbeatInterval, "positive", Duration.zero)
    yield* PgPerspectiveSnapshots.decode(config.snapshots)
    yield* PgQueueVacuum.decode(config.queueVacuum)
    yield* PerspectiveStreamLockOptions.decode(config.streamLocks)
    yield* rebuildDuration("rewind.debounceWindow", config.rewind?.debounceWindow)
    yield* rebuildDuration("rewind.debounceCap", config.rewind?.debounceCap)
    const scan = config.rewind?.startupScan
    if (scan !== undefined && scan !== "blocking" && scan !== "background" && scan !== "off") {
      return yield* new StreamLockError.InvalidRebuildOptions({
        option: "rewind.startupScan",
        rule: `must be "blocking", "background" or "off"`,
        value: show(scan)
      })
    }
    yield* duration("health.maxLag", config.health?.maxLag, "nonNegative", Duration.zero)
    yield* finite("health.maxFailedCursors", config.health?.maxFailedCursors, { min: 0, integer: true })
    yield* duration("health.heartbeatMaxAge", config.health?.heartbeatMaxAge, "positive", Duration.zero, true)
    yield* duration("watchdog.stuckAfter", config.watchdog?.stuckAfter, "positive", Duration.zero)
    yield* duration("watchdog.deadInstanceAfter", config.watchdog?.deadInstanceAfter, "positive", Duration.zero)
    yield* finite("watchdog.limit", config.watchdog?.limit, { min: 1, integer: true })
    yield* duration("watchdog.interval", config.watchdog?.interval, "positive", Duration.zero, true)
    yield* TrackedEventTypeRegistry.make(config.trackedEventTypes)
  })
