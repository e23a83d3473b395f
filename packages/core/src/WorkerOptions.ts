/**
 * Perspective worker options: names, defaults and validation.
 *
 * Names follow the original `PerspectiveWorkerOptions`, camelCased, with the unit in the name. Every field is
 * optional on input; {@link decode} fills the defaults and rejects bad values with ONE
 * {@link InvalidWorkerOptions} that lists every problem as `<path> <rule>, got <value>`, e.g.
 * `drainBatcher.maxSize must be a positive integer, got -1`. Unknown keys are rejected too (a typo would
 * otherwise silently fall back to a default).
 *
 * | option | default | rule |
 * |---|---|---|
 * | pollingIntervalMilliseconds | 1000 | positive integer |
 * | notifyHealthyPollingIntervalMilliseconds | 1000 | positive integer |
 * | maxPerspectiveEventAttempts | 10 | positive integer, or null = no limit |
 * | leaseSeconds | 300 | positive integer; also the dedup cache retention |
 * | abandonStaleInstanceThresholdSeconds | 30 | positive integer |
 * | debugMode | false | boolean |
 * | partitionCount | 10000 | positive integer |
 * | idleThresholdPolls | 2 | positive integer |
 * | perspectiveBatchSize | 100 | positive integer |
 * | maxConcurrentPerspectives | 30 | positive integer |
 * | maxConcurrentDrainConsumers | 4 | positive integer |
 * | maxStreamsPerBatch | 300 | positive integer |
 * | drainLoopMaxIterations | 5 | positive integer |
 * | drainLoopRefetchMinBatch | 2 | positive integer |
 * | drainBatcher.slidingWindowMilliseconds | 300 | positive integer |
 * | drainBatcher.maxWaitMilliseconds | 3000 | positive integer, >= slidingWindowMilliseconds |
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
import { Data, Effect, Schema, SchemaIssue } from "effect"

const rule = <T>(check: (value: T) => boolean, text: string) =>
  Schema.makeFilter<T>((value) =>
    check(value) ? undefined : `${text}, got ${typeof value === "number" ? String(value) : JSON.stringify(value)}`
  )

const PositiveInt = Schema.Number.check(rule((n) => Number.isSafeInteger(n) && n > 0, "must be a positive integer"))

const withDefault = <S extends Schema.Top>(schema: S, value: S["Encoded"]) =>
  schema.pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

const int = (value: number) => withDefault(PositiveInt, value)

/**
 * Sliding-window batching of drain signals.
 *
 * @category schemas
 * @since 0.1.0
 */
export const DrainBatcherOptions = Schema.Struct({
  slidingWindowMilliseconds: int(300),
  maxWaitMilliseconds: int(3000),
  maxSize: int(1000)
}).check(
  Schema.makeFilter((o) =>
    o.maxWaitMilliseconds >= o.slidingWindowMilliseconds
      ? undefined
      : {
          path: ["maxWaitMilliseconds"],
          issue: `must be >= slidingWindowMilliseconds (${o.slidingWindowMilliseconds}), got ${o.maxWaitMilliseconds}`
        }
  )
)

/**
 * Retry of completions whose acknowledgement never arrived, for `BatchedCompletionStrategy.resetStale`:
 * `retryTimeoutSeconds * backoffMultiplier ^ retries`, capped at `maxBackoffSeconds` (1 s, 2 s, 4 s ... 60 s by
 * default).
 *
 * @category schemas
 * @since 0.1.0
 */
export const RetryOptions = Schema.Struct({
  retryTimeoutSeconds: int(1),
  enableExponentialBackoff: withDefault(Schema.Boolean, true),
  backoffMultiplier: withDefault(Schema.Number.check(rule((n) => Number.isFinite(n) && n >= 1, "must be a finite number >= 1")), 2),
  maxBackoffSeconds: int(60)
}).check(
  Schema.makeFilter((o) =>
    o.maxBackoffSeconds >= o.retryTimeoutSeconds
      ? undefined
      : {
          path: ["maxBackoffSeconds"],
          issue: `must be >= retryTimeoutSeconds (${o.retryTimeoutSeconds}), got ${o.maxBackoffSeconds}`
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
  pollingIntervalMilliseconds: int(1000),
  notifyHealthyPollingIntervalMilliseconds: int(1000),
  maxPerspectiveEventAttempts: withDefault(Schema.NullOr(PositiveInt), 10),
  leaseSeconds: int(300),
  abandonStaleInstanceThresholdSeconds: int(30),
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
 * Decoded worker options (every field present).
 *
 * @category models
 * @since 0.1.0
 */
export type WorkerOptions = typeof WorkerOptionsSchema.Type

/**
 * Options as users write them (every field optional).
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

const toInvalid = (error: Schema.SchemaError) =>
  new InvalidWorkerOptions({
    issues: formatter(error.issue).issues.map((issue) => ({
      path: (issue.path ?? []).map((key) => String(typeof key === "object" ? key.key : key)).join("."),
      message: issue.message.startsWith("Expected ") ? `must be of type ${issue.message.slice(9)}` : issue.message
    }))
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
