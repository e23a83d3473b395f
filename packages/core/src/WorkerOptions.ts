/**
 * Perspective worker options: names, defaults and validation.
 *
 * Names follow the original `PerspectiveWorkerOptions`, camelCased; durations are `Duration.Input`s (a `Duration`,
 * `"5 minutes"`, a number of milliseconds, ...) named after their concept, without the unit: the original's
 * `LeaseSeconds` is `lease`, `PollingIntervalMilliseconds` is `pollingInterval` (the root README maps every name).
 * Every field is optional on input; {@link decode} fills the defaults and rejects bad values with ONE
 * {@link InvalidWorkerOptions} that lists every problem as `<path> <rule>, got <value>`, e.g.
 * `drainBatcher.maxSize must be a positive integer, got -1`. Unknown keys are rejected too (a typo would
 * otherwise silently fall back to a default), and a name of the old `*Seconds` / `*Milliseconds` form says what it
 * is called now. Decoded options hold `Duration`s.
 *
 * | option | default | rule |
 * |---|---|---|
 * | pollingInterval | 1 second | finite, positive duration |
 * | notifyHealthyPollingInterval | 1 second | finite, positive duration |
 * | maxPerspectiveEventAttempts | 10 | positive integer, or null = no limit |
 * | lease | 5 minutes | whole seconds, >= 1 second; also the dedup cache retention |
 * | abandonStaleInstanceThreshold | 30 seconds | whole seconds, >= 1 second |
 * | debugMode | false | boolean |
 * | partitionCount | 10000 | positive integer |
 * | idleThresholdPolls | 2 | positive integer |
 * | perspectiveBatchSize | 100 | positive integer |
 * | maxConcurrentPerspectives | 30 | positive integer |
 * | maxConcurrentDrainConsumers | 4 | positive integer |
 * | maxStreamsPerBatch | 300 | positive integer |
 * | drainLoopMaxIterations | 5 | positive integer |
 * | drainLoopRefetchMinBatch | 2 | positive integer |
 * | drainBatcher.slidingWindow | 300 millis | finite, positive duration |
 * | drainBatcher.maxWait | 3 seconds | finite, positive duration, >= slidingWindow |
 * | drainBatcher.maxSize | 1000 | positive integer |
 *
 * `maxConcurrentPerspectives` bounds the per-perspective model loads a cycle runs at once (the applies themselves are
 * synchronous folds, so that is the part of a perspective group that can overlap).
 *
 * The original's `retryOptions` (retry of completions whose acknowledgement never arrived) is not a worker option
 * here: a cycle commits its own completions in one transaction, and a commit that fails is redone from the
 * database (its rows are delivered again), never replayed from memory. {@link RetryOptions} remains the
 * configuration of `BatchedCompletionStrategy`'s manual delivery (`resetStale`).
 *
 * @since 0.1.0
 */
import { Data, Duration, Effect, Schema, SchemaIssue } from "effect"
import * as DurationOption from "./internal/durationOption.js"

const rule = <T>(check: (value: T) => boolean, text: string) =>
  Schema.makeFilter<T>((value) =>
    check(value) ? undefined : `${text}, got ${typeof value === "number" ? String(value) : JSON.stringify(value)}`
  )

const PositiveInt = Schema.Number.check(rule((n) => Number.isSafeInteger(n) && n > 0, "must be a positive integer"))

const withDefault = <S extends Schema.Top>(schema: S, value: S["Encoded"]) =>
  schema.pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

const int = (value: number) => withDefault(PositiveInt, value)

const duration = (rule: DurationOption.Rule, value: Duration.Duration) => withDefault(DurationOption.schema(rule), value)

/**
 * Sliding-window batching of drain signals.
 *
 * @category schemas
 * @since 0.1.0
 */
export const DrainBatcherOptions = Schema.Struct({
  slidingWindow: duration("positive", Duration.millis(300)),
  maxWait: duration("positive", Duration.seconds(3)),
  maxSize: int(1000)
}).check(
  Schema.makeFilter((o) =>
    Duration.isGreaterThanOrEqualTo(o.maxWait, o.slidingWindow)
      ? undefined
      : {
          path: ["maxWait"],
          issue: `must be >= slidingWindow (${Duration.format(o.slidingWindow)}), got ${Duration.format(o.maxWait)}`
        }
  )
)

/**
 * Retry of completions whose acknowledgement never arrived, for `BatchedCompletionStrategy.resetStale`:
 * `retryTimeout * backoffMultiplier ^ retries`, capped at `maxBackoff` (1 s, 2 s, 4 s ... 60 s by default). Both
 * are finite, positive durations.
 *
 * @category schemas
 * @since 0.1.0
 */
export const RetryOptions = Schema.Struct({
  retryTimeout: duration("positive", Duration.seconds(1)),
  enableExponentialBackoff: withDefault(Schema.Boolean, true),
  backoffMultiplier: withDefault(Schema.Number.check(rule((n) => Number.isFinite(n) && n >= 1, "must be a finite number >= 1")), 2),
  maxBackoff: duration("positive", Duration.seconds(60))
}).check(
  Schema.makeFilter((o) =>
    Duration.isGreaterThanOrEqualTo(o.maxBackoff, o.retryTimeout)
      ? undefined
      : {
          path: ["maxBackoff"],
          issue: `must be >= retryTimeout (${Duration.format(o.retryTimeout)}), got ${Duration.format(o.maxBackoff)}`
        }
  )
)

/**
 * Every worker option, with defaults.
 *
 * @category schemas
 * @since 0.1.0
 */
export const WorkerOptionsSchema = Schema.Struct({
  pollingInterval: duration("positive", Duration.seconds(1)),
  notifyHealthyPollingInterval: duration("positive", Duration.seconds(1)),
  maxPerspectiveEventAttempts: withDefault(Schema.NullOr(PositiveInt), 10),
  lease: duration("wholeSeconds", Duration.minutes(5)),
  abandonStaleInstanceThreshold: duration("wholeSeconds", Duration.seconds(30)),
  debugMode: withDefault(Schema.Boolean, false),
  partitionCount: int(10_000),
  idleThresholdPolls: int(2),
  perspectiveBatchSize: int(100),
  maxConcurrentPerspectives: int(30),
  maxConcurrentDrainConsumers: int(4),
  maxStreamsPerBatch: int(300),
  drainLoopMaxIterations: int(5),
  drainLoopRefetchMinBatch: int(2),
  drainBatcher: withDefault(DrainBatcherOptions, {})
})

/**
 * Decoded worker options (every field present; durations as `Duration`s).
 *
 * @category models
 * @since 0.1.0
 */
export type WorkerOptions = typeof WorkerOptionsSchema.Type

/**
 * Options as users write them (every field optional; durations as `Duration.Input`s).
 *
 * @category models
 * @since 0.1.0
 */
export type WorkerOptionsInput = typeof WorkerOptionsSchema.Encoded

/**
 * Decoded retry options.
 *
 * @category models
 * @since 0.1.0
 */
export type RetryOptions = typeof RetryOptions.Type

/**
 * Decoded drain batcher options.
 *
 * @category models
 * @since 0.1.0
 */
export type DrainBatcherOptions = typeof DrainBatcherOptions.Type

/**
 * One rule an option broke.
 *
 * @category models
 * @since 0.1.0
 */
export interface OptionIssue {
  /** Dotted option path, e.g. `drainBatcher.maxSize`; empty for the options object itself. */
  readonly path: string
  readonly message: string
}

/**
 * The options are invalid; `issues` lists every broken rule, and the message joins them.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidWorkerOptions extends Data.TaggedError("InvalidWorkerOptions")<{
  readonly issues: ReadonlyArray<OptionIssue>
}> {
  override get message(): string {
    return `invalid worker options: ${this.issues.map((i) => (i.path === "" ? i.message : `${i.path} ${i.message}`)).join("; ")}`
  }
}

const formatter = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) =>
    issue._tag === "UnexpectedKey"
      ? "is not a known option"
      : issue._tag === "MissingKey"
        ? "is required"
        : SchemaIssue.defaultLeafHook(issue)
})

// The names these options had before durations became `Duration.Input`s: a JavaScript caller (no type check)
// still passing one is told the new name instead of only "not a known option".
const renamed: Readonly<Record<string, string>> = {
  pollingIntervalMilliseconds: "pollingInterval",
  notifyHealthyPollingIntervalMilliseconds: "notifyHealthyPollingInterval",
  leaseSeconds: "lease",
  abandonStaleInstanceThresholdSeconds: "abandonStaleInstanceThreshold",
  slidingWindowMilliseconds: "slidingWindow",
  maxWaitMilliseconds: "maxWait",
  retryTimeoutSeconds: "retryTimeout",
  maxBackoffSeconds: "maxBackoff"
}

const toInvalid = (error: Schema.SchemaError) =>
  new InvalidWorkerOptions({
    issues: formatter(error.issue).issues.map((issue) => {
      const keys = (issue.path ?? []).map((key) => String(typeof key === "object" ? key.key : key))
      const now = renamed[keys.at(-1) ?? ""]
      const message = issue.message.startsWith("Expected ") ? `must be of type ${issue.message.slice(9)}` : issue.message
      return {
        path: keys.join("."),
        message: now !== undefined && message === "is not a known option" ? `${message}: it is now \`${now}\`, a Duration.Input` : message
      }
    })
  })

const decodeSchema = Schema.decodeUnknownEffect(WorkerOptionsSchema)

/**
 * Decodes options, filling defaults; fails with {@link InvalidWorkerOptions} naming every bad option.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decode = (input: unknown = {}): Effect.Effect<WorkerOptions, InvalidWorkerOptions> =>
  decodeSchema(input, { errors: "all", onExcessProperty: "error", reportInput: true }).pipe(Effect.mapError(toInvalid))

/**
 * The defaults.
 *
 * @category constructors
 * @since 0.1.0
 */
export const defaults: WorkerOptions = Schema.decodeUnknownSync(WorkerOptionsSchema)({})

/**
 * The default {@link RetryOptions}: 1 s, doubling, capped at 60 s.
 *
 * @category constructors
 * @since 0.1.0
 */
export const defaultRetryOptions: RetryOptions = Schema.decodeUnknownSync(RetryOptions)({})
