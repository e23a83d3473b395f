/**
 * Validation of `PgWorkCoordinator.Options`: every value a number must make sense as, or a `PostgresConfigError`
 * naming the option (NaN, negative or zero durations, a multiplier below 1 would otherwise reach the SQL and
 * make backoffs and claims silently wrong).
 */
import { Effect } from "effect"
import type { WorkerOptions } from "@whizbang/core"
import * as PgPerspectiveSnapshots from "../PgPerspectiveSnapshots.js"
import { PostgresConfigError } from "../PostgresError.js"

export interface FailureBackoff {
  readonly initialMilliseconds: number
  readonly multiplier: number
  readonly maxMilliseconds: number
}

export interface Input {
  readonly leaseSeconds?: number
  readonly debugMode?: boolean
  readonly maxPerspectiveEventAttempts?: number | null
  readonly failureBackoff?: FailureBackoff
  readonly abandonStaleInstanceThresholdSeconds?: number
  readonly affinityGraceMilliseconds?: number
  readonly snapshots?: PgPerspectiveSnapshots.Input
}

export interface Validated {
  readonly leaseSeconds: number
  readonly debugMode: boolean
  readonly maxPerspectiveEventAttempts: number | null
  readonly failureBackoff: FailureBackoff
  readonly abandonStaleInstanceThresholdSeconds: number
  readonly affinityGraceMilliseconds: number
  readonly snapshots: PgPerspectiveSnapshots.Options
}

/** 1 s, doubling, capped at 60 s. */
export const defaultFailureBackoff: FailureBackoff = { initialMilliseconds: 1000, multiplier: 2, maxMilliseconds: 60_000 }

const positiveInt = (n: number) => Number.isSafeInteger(n) && n > 0
const positive = (n: number) => Number.isFinite(n) && n > 0

export const validate = (options: Input, defaults: WorkerOptions.WorkerOptions): Effect.Effect<Validated, PostgresConfigError> =>
  Effect.gen(function* () {
    const backoff = options.failureBackoff ?? defaultFailureBackoff
    const value: Omit<Validated, "snapshots"> = {
      leaseSeconds: options.leaseSeconds ?? defaults.leaseSeconds,
      debugMode: options.debugMode ?? defaults.debugMode,
      maxPerspectiveEventAttempts:
        options.maxPerspectiveEventAttempts === undefined ? defaults.maxPerspectiveEventAttempts : options.maxPerspectiveEventAttempts,
      failureBackoff: backoff,
      abandonStaleInstanceThresholdSeconds: options.abandonStaleInstanceThresholdSeconds ?? defaults.abandonStaleInstanceThresholdSeconds,
      affinityGraceMilliseconds: options.affinityGraceMilliseconds ?? 3000
    }
    const rules: ReadonlyArray<readonly [string, unknown, boolean, string]> = [
      ["leaseSeconds", value.leaseSeconds, positiveInt(value.leaseSeconds), "a positive integer"],
      [
        "abandonStaleInstanceThresholdSeconds",
        value.abandonStaleInstanceThresholdSeconds,
        positiveInt(value.abandonStaleInstanceThresholdSeconds),
        "a positive integer"
      ],
      [
        "maxPerspectiveEventAttempts",
        value.maxPerspectiveEventAttempts,
        value.maxPerspectiveEventAttempts === null || positiveInt(value.maxPerspectiveEventAttempts),
        "a positive integer or null (no limit)"
      ],
      ["debugMode", value.debugMode, typeof value.debugMode === "boolean", "a boolean"],
      [
        "failureBackoff.initialMilliseconds",
        backoff.initialMilliseconds,
        positive(backoff.initialMilliseconds),
        "a positive finite number"
      ],
      [
        "failureBackoff.multiplier",
        backoff.multiplier,
        Number.isFinite(backoff.multiplier) && backoff.multiplier >= 1,
        "a finite number >= 1"
      ],
      [
        "failureBackoff.maxMilliseconds",
        backoff.maxMilliseconds,
        positive(backoff.maxMilliseconds) && backoff.maxMilliseconds >= backoff.initialMilliseconds,
        `a finite number >= failureBackoff.initialMilliseconds (${backoff.initialMilliseconds})`
      ],
      [
        "affinityGraceMilliseconds",
        value.affinityGraceMilliseconds,
        Number.isFinite(value.affinityGraceMilliseconds) && value.affinityGraceMilliseconds >= 0,
        "a finite number >= 0"
      ]
    ]
    for (const [option, got, ok, rule] of rules) {
      if (!ok) return yield* new PostgresConfigError({ option, message: `${option} must be ${rule}, got ${String(got)}` })
    }
    const snapshots = yield* PgPerspectiveSnapshots.decode(options.snapshots)
    return { ...value, snapshots }
  })
