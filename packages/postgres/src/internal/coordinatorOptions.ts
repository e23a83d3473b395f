/**
 * Validation of `PgWorkCoordinator.Options`: every value must make sense, or a `PostgresConfigError` naming the
 * option (NaN, negative or zero durations, a multiplier below 1 would otherwise reach the SQL and make backoffs and
 * claims silently wrong). Durations are decoded here, once, into the numbers the SQL takes.
 */
import type { WorkerOptions } from "@whizbang/core"
import { Duration, Effect } from "effect"
import * as DurationOption from "./durationOption.js"
import * as PgPerspectiveSnapshots from "../PgPerspectiveSnapshots.js"
import * as PgQueueVacuum from "../PgQueueVacuum.js"
import { PostgresConfigError } from "../PostgresError.js"

export interface FailureBackoff {
  readonly initial?: Duration.Input | undefined
  readonly multiplier?: number | undefined
  readonly max?: Duration.Input | undefined
}

export interface Input {
  readonly lease?: Duration.Input | undefined
  readonly debugMode?: boolean | undefined
  readonly maxPerspectiveEventAttempts?: number | null | undefined
  readonly failureBackoff?: FailureBackoff | undefined
  readonly abandonStaleInstanceThreshold?: Duration.Input | undefined
  readonly affinityGrace?: Duration.Input | undefined
  readonly snapshots?: PgPerspectiveSnapshots.Input
  readonly queueVacuum?: PgQueueVacuum.Input
}

/** The numbers the SQL takes. */
export interface Validated {
  readonly leaseSeconds: number
  readonly debugMode: boolean
  readonly maxPerspectiveEventAttempts: number | null
  readonly failureBackoff: { readonly initialMillis: number; readonly multiplier: number; readonly maxMillis: number }
  readonly abandonStaleInstanceThresholdSeconds: number
  readonly affinityGraceMillis: number
  readonly snapshots: PgPerspectiveSnapshots.Options
  /** Removed work rows between two vacuums of the queue tables; null: off. */
  readonly queueVacuumEveryRows: number | null
}

/** 1 s, doubling, capped at 60 s. */
export const defaultFailureBackoff = { initial: Duration.seconds(1), multiplier: 2, max: Duration.seconds(60) } as const

/** Default of `affinityGrace`. */
export const defaultAffinityGrace = Duration.seconds(3)

const positiveInt = (n: unknown) => typeof n === "number" && Number.isSafeInteger(n) && n > 0

const invalid = (option: string, message: string) => new PostgresConfigError({ option, message: `${option} ${message}` })

/** The coordinator's own options: the ones that are not worker options. */
export type OwnInput = Pick<Input, "failureBackoff" | "affinityGrace" | "snapshots" | "queueVacuum">

/** {@link OwnInput}, decoded. */
export type Own = Pick<Validated, "failureBackoff" | "affinityGraceMillis" | "snapshots" | "queueVacuumEveryRows">

/** The options shared with the worker, decoded (`WorkerOptions.decode` decodes the same fields by the same rules). */
export type Shared = Pick<
  WorkerOptions.WorkerOptions,
  "lease" | "debugMode" | "maxPerspectiveEventAttempts" | "abandonStaleInstanceThreshold"
>

/** Decodes the coordinator's own options; the pipeline takes the shared ones from the decoded worker options. */
export const decodeOwn = (options: OwnInput): Effect.Effect<Own, PostgresConfigError> =>
  Effect.gen(function* () {
    const backoff = options.failureBackoff ?? {}
    const initial = yield* DurationOption.decode("failureBackoff.initial", backoff.initial, "positive", defaultFailureBackoff.initial)
    const multiplier = backoff.multiplier ?? defaultFailureBackoff.multiplier
    if (typeof multiplier !== "number" || !Number.isFinite(multiplier) || multiplier < 1) {
      return yield* invalid("failureBackoff.multiplier", `must be a finite number >= 1, got ${String(multiplier)}`)
    }
    const max = yield* DurationOption.decode("failureBackoff.max", backoff.max, "positive", defaultFailureBackoff.max)
    if (Duration.isLessThan(max, initial)) {
      return yield* invalid(
        "failureBackoff.max",
        `must be >= failureBackoff.initial (${Duration.format(initial)}), got ${Duration.format(max)}`
      )
    }
    const grace = yield* DurationOption.decode("affinityGrace", options.affinityGrace, "nonNegative", defaultAffinityGrace)
    const snapshots = yield* PgPerspectiveSnapshots.decode(options.snapshots)
    const queueVacuumEveryRows = yield* PgQueueVacuum.decode(options.queueVacuum)
    return {
      failureBackoff: { initialMillis: Duration.toMillis(initial), multiplier, maxMillis: Duration.toMillis(max) },
      // The claim SQL takes whole milliseconds.
      affinityGraceMillis: Math.ceil(Duration.toMillis(grace)),
      snapshots,
      queueVacuumEveryRows
    }
  })

/** The numbers the SQL takes, from options decoded already: nothing is checked here. */
export const combine = (shared: Shared, own: Own): Validated => ({
  leaseSeconds: Duration.toSeconds(shared.lease),
  debugMode: shared.debugMode,
  maxPerspectiveEventAttempts: shared.maxPerspectiveEventAttempts,
  abandonStaleInstanceThresholdSeconds: Duration.toSeconds(shared.abandonStaleInstanceThreshold),
  ...own
})

/** Decodes every option of a coordinator used on its own (no worker options to take the shared ones from). */
export const decode = (options: Input, defaults: WorkerOptions.WorkerOptions): Effect.Effect<Validated, PostgresConfigError> =>
  Effect.gen(function* () {
    const lease = yield* DurationOption.decode("lease", options.lease, "wholeSeconds", defaults.lease)
    const threshold = yield* DurationOption.decode(
      "abandonStaleInstanceThreshold",
      options.abandonStaleInstanceThreshold,
      "wholeSeconds",
      defaults.abandonStaleInstanceThreshold
    )
    const attempts =
      options.maxPerspectiveEventAttempts === undefined ? defaults.maxPerspectiveEventAttempts : options.maxPerspectiveEventAttempts
    if (attempts !== null && !positiveInt(attempts)) {
      return yield* invalid("maxPerspectiveEventAttempts", `must be a positive integer or null (no limit), got ${String(attempts)}`)
    }
    const debugMode = options.debugMode ?? defaults.debugMode
    if (typeof debugMode !== "boolean") return yield* invalid("debugMode", `must be a boolean, got ${String(debugMode)}`)
    const own = yield* decodeOwn(options)
    return combine({ lease, abandonStaleInstanceThreshold: threshold, maxPerspectiveEventAttempts: attempts, debugMode }, own)
  })
