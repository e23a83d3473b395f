/**
 * Perspective versions for operators: list every version with its build progress and lag, switch reads to a new
 * version (`cutover`) and back (`rollback`). What `whizbang perspectives`, `whizbang cutover` and
 * `whizbang rollback` run; the work is `PgPerspectiveVersions`' (see the `@whizbang/postgres` README).
 *
 * Errors are the CLI's {@link OperationError}, one clear message each: an unknown perspective or version is
 * `NotFound`, nothing to roll back to is `NotFound`, a version not ready to serve (history still to replay, too
 * many events pending, dead letters, retired) is `Refused`, a hand-over that did not finish in time is `TimedOut`
 * (nothing switched: reads still serve the previous version).
 *
 * @since 0.3.0
 */
import { Perspective } from "@whizbang/core"
import { DurationOption } from "@whizbang/core/internal"
import { type PgClient, PgPerspectiveVersions, type PostgresError, PgWatchdog, type VersionError } from "@whizbang/postgres"
import { type Duration, Effect, Result } from "effect"
import { orFailure } from "./internal/database.js"
import * as Validate from "./internal/validate.js"
import { invalidInput, NotFound, OperationError, Refused, TimedOut } from "./OperationError.js"

/**
 * Options of {@link list}.
 *
 * @category models
 * @since 0.3.0
 */
export interface ListOptions {
  /** A heartbeat older than this means the instance does not run anything (`hasRunner`); default 30 seconds. */
  readonly deadInstanceAfter?: Duration.Input | undefined
}

/**
 * Every registered version, by base name then version (empty on a schema without the versions registry).
 *
 * @category constructors
 * @since 0.3.0
 */
export const list = (
  options: ListOptions = {}
): Effect.Effect<ReadonlyArray<PgPerspectiveVersions.VersionInfo>, OperationError, PgClient.PgClient> =>
  orFailure(PgWatchdog.registeredVersions(options))

/**
 * Whether nothing is on its way: no version is `building` or `ready` (each base serves its live version; a
 * `retiring` one only waits out its grace period). `whizbang perspectives --watch` without a terminal stops then.
 *
 * @category predicates
 * @since 0.3.0
 */
export const settled = (versions: ReadonlyArray<PgPerspectiveVersions.VersionInfo>): boolean =>
  versions.every((v) => v.state !== "building" && v.state !== "ready")

/**
 * Options of {@link cutover} and {@link rollback}. Durations as `Duration.Input` (`"30 seconds"`, `{ minutes: 2 }`,
 * a number of milliseconds).
 *
 * @category models
 * @since 0.3.0
 */
export interface SwitchOptions {
  /** The base name (`balance`), or a version's key (`balance__v2`, the same as `version: 2`). */
  readonly perspective: string
  readonly maxLag?: number | undefined
  readonly timeout?: Duration.Input | undefined
  readonly grace?: Duration.Input | undefined
}

/**
 * Options of {@link cutover}.
 *
 * @category models
 * @since 0.3.0
 */
export interface CutoverOptions extends SwitchOptions {
  /** The version to serve; default the newest version newer than the live one that is not retired. */
  readonly version?: number | undefined
}

const duration = (option: string, input: Duration.Input | undefined, rule: DurationOption.Rule) =>
  input === undefined
    ? Effect.succeed(undefined)
    : Result.match(DurationOption.check(input, rule), {
        onSuccess: (d) => Effect.succeed(d),
        onFailure: (message) => Effect.fail(invalidInput(option, `${option} ${message}`))
      })

const target = (options: CutoverOptions) =>
  Effect.gen(function* () {
    const { baseName, version } = Perspective.parseKey(options.perspective)
    if (!Perspective.isValidBaseName(baseName)) {
      return yield* invalidInput(
        "perspective",
        `invalid perspective "${options.perspective}": expected a base name (/^[a-z][a-z0-9_]{0,47}$/) or a version's key (<base>__v<N>)`
      )
    }
    const keyed = options.perspective !== baseName
    if (options.version !== undefined) {
      if (!Number.isInteger(options.version) || options.version < 1) {
        return yield* invalidInput("version", `version must be a whole number from 1, got ${options.version}`)
      }
      if (keyed && options.version !== version) {
        return yield* invalidInput("version", `${options.perspective} is version ${version}, but --version ${options.version} was given`)
      }
    }
    const maxLag = options.maxLag === undefined ? undefined : yield* Validate.positiveInt(options.maxLag, "max-lag")
    return {
      baseName,
      version: options.version ?? (keyed ? version : undefined),
      switch: {
        maxLag,
        timeout: yield* duration("timeout", options.timeout, "positive"),
        grace: yield* duration("grace", options.grace, "nonNegative")
      }
    }
  })

/** A version error as the CLI's error: the same message, a reason that maps to an exit code. */
const operationError = (e: VersionError.VersionError | PostgresError.PostgresConfigError): OperationError => {
  switch (e._tag) {
    case "PostgresConfigError":
      return invalidInput(e.option, e.message)
    case "UnknownPerspectiveVersion":
      return new OperationError({
        reason: new NotFound({ what: "perspective version", id: `${e.baseName}${e.version === undefined ? "" : ` v${e.version}`}` }),
        message: e.message
      })
    case "NothingToRollBack":
      return new OperationError({ reason: new NotFound({ what: "retiring version of", id: e.baseName }), message: e.message })
    case "VersionNotReady":
    case "VersionTableConflict":
    case "VersionInUse":
      return new OperationError({ reason: new Refused(), message: e.message })
    case "CutoverTimedOut":
    case "VersionWaitTimedOut":
      return new OperationError({ reason: new TimedOut({ millis: e.timeoutMillis }), message: e.message })
  }
}

const mapErrors = <A>(
  effect: Effect.Effect<A, PgPerspectiveVersions.HandOverError | PostgresError.PostgresError, PgClient.PgClient>
): Effect.Effect<A, OperationError, PgClient.PgClient> =>
  orFailure(
    Effect.catchIf(
      effect,
      (e): e is PgPerspectiveVersions.HandOverError => e._tag !== "PostgresError",
      (e) => Effect.fail(operationError(e))
    )
  )

/**
 * Switches reads of a perspective to a version (`PgPerspectiveVersions.cutover`): waits until it applied the events
 * pending at the start, then swaps the view in one transaction; the replaced version is `retiring` for `grace`.
 *
 * @category constructors
 * @since 0.3.0
 */
export const cutover = (options: CutoverOptions): Effect.Effect<PgPerspectiveVersions.CutoverResult, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const t = yield* target(options)
    return yield* mapErrors(PgPerspectiveVersions.cutover(t.baseName, t.version, t.switch))
  })

/**
 * Switches reads back to the older version the last cutover replaced, while it is still `retiring`
 * (`PgPerspectiveVersions.rollback`). Never forward: a second rollback is `NotFound` (nothing to roll back to),
 * naming the newer version `cutover` goes to.
 *
 * @category constructors
 * @since 0.3.0
 */
export const rollback = (options: SwitchOptions): Effect.Effect<PgPerspectiveVersions.CutoverResult, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const t = yield* target(options)
    if (t.version !== undefined) {
      return yield* invalidInput("perspective", `rollback takes the perspective's base name ("${t.baseName}"), not a version`)
    }
    return yield* mapErrors(PgPerspectiveVersions.rollback(t.baseName, t.switch))
  })

/**
 * A duration given on the command line: `500ms`, `30s`, `5m`, `1h`, a bare number of seconds, or an Effect
 * duration string (`"30 seconds"`).
 *
 * @category constructors
 * @since 0.3.0
 */
export const parseDuration = (option: string, text: string): Effect.Effect<Duration.Duration, OperationError> => {
  const short = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text)
  const units = { ms: "millis", s: "seconds", m: "minutes", h: "hours" } as const
  const input = short === null ? text : `${short[1]} ${units[(short[2] ?? "s") as keyof typeof units]}`
  return Result.match(DurationOption.check(input, "nonNegative"), {
    onSuccess: (d) => Effect.succeed(d),
    onFailure: () => Effect.fail(invalidInput(option, `${option} must be a duration such as 500ms, 30s, 5m or "2 minutes", got "${text}"`))
  })
}

/**
 * Options of {@link retire}.
 *
 * @category models
 * @since 0.3.0
 */
export interface RetireOptions {
  /** A version's key (`balance__v2`), or a base name for every version of it. */
  readonly perspective: string
  /** Retire even while live instances run it. */
  readonly force?: boolean | undefined
  /** A heartbeat older than this means the instance does not run anything; default 30 seconds. */
  readonly deadInstanceAfter?: Duration.Input | undefined
}

/**
 * Retires a perspective removed from the code (`PgPerspectiveVersions.retire`): appends stop routing to it, its
 * pending work and planned history are dropped; its table and view stay. `Refused` while a live instance runs it
 * (unless `force`) or a hand-over is under way; `NotFound` for a name not registered (naming those that are).
 *
 * @category constructors
 * @since 0.3.0
 */
export const retire = (
  options: RetireOptions
): Effect.Effect<ReadonlyArray<PgPerspectiveVersions.Retired>, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    yield* Validate.perspective(Perspective.parseKey(options.perspective).baseName)
    return yield* orFailure(
      Effect.catchIf(
        PgPerspectiveVersions.retire(options.perspective, {
          force: options.force,
          deadInstanceAfter: options.deadInstanceAfter
        }),
        (e): e is Exclude<typeof e, PostgresError.PostgresError> => e._tag !== "PostgresError",
        (e) => Effect.fail(operationError(e))
      )
    )
  })
