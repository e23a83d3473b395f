/**
 * Options that are durations: every duration a Whizbang package takes as input is an Effect `Duration.Input` — a
 * `Duration`, a number of milliseconds, a string such as `"5 seconds"`, a `[seconds, nanos]` pair or an object such
 * as `{ minutes: 2 }` — decoded once where the option enters, by one of three rules:
 *
 * | rule | accepts |
 * |---|---|
 * | `"positive"` | a finite duration > 0 |
 * | `"nonNegative"` | a finite duration >= 0 |
 * | `"wholeSeconds"` | a whole number of seconds, at least 1 second (values stored in SQL as integer seconds) |
 *
 * Anything else is refused with a message naming the rule and the value given, e.g.
 * `must be a whole number of seconds, at least 1 second, got 300 (a number is milliseconds)`. Unlike
 * `Duration.fromInput`, `NaN` and objects with no known unit are refused rather than read as zero.
 *
 * Each package wraps {@link check} into its own typed error naming the option (`InvalidWorkerOptions`,
 * `PostgresConfigError`, ...); {@link schema} is the same rule as a `Schema` for option structs.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Option, Result, Schema, SchemaIssue, SchemaTransformation } from "effect"

/**
 * What a duration option accepts (see the module's table).
 *
 * @category models
 * @since 0.1.0
 */
export type Rule = "positive" | "nonNegative" | "wholeSeconds"

const ruleText: Record<Rule, string> = {
  positive: "must be a finite, positive duration",
  nonNegative: "must be a finite duration >= 0",
  wholeSeconds: "must be a whole number of seconds, at least 1 second"
}

const units = new Set(["weeks", "days", "hours", "minutes", "seconds", "milliseconds", "microseconds", "nanoseconds"])

const isFiniteNumber = (u: unknown): u is number => typeof u === "number" && Number.isFinite(u)

/** `Duration.fromInput`, minus the inputs it silently reads as zero (NaN, `{}`, objects with unknown keys). */
const parse = (input: unknown): Option.Option<Duration.Duration> => {
  if (Duration.isDuration(input)) return Option.some(input)
  if (typeof input === "number") return Number.isNaN(input) ? Option.none() : Option.some(Duration.millis(input))
  if (typeof input === "bigint" || typeof input === "string") return Duration.fromInput(input as Duration.Input)
  if (Array.isArray(input)) {
    return input.length === 2 && isFiniteNumber(input[0]) && isFiniteNumber(input[1])
      ? Duration.fromInput(input as unknown as Duration.Input)
      : Option.none()
  }
  if (typeof input === "object" && input !== null) {
    const entries = Object.entries(input)
    const known = entries.length > 0 && entries.every(([key, value]) => units.has(key) && (value === undefined || isFiniteNumber(value)))
    return known ? Duration.fromInput(input as Duration.Input) : Option.none()
  }
  return Option.none()
}

const satisfies = (duration: Duration.Duration, rule: Rule): boolean => {
  if (!Duration.isFinite(duration)) return false
  switch (rule) {
    case "positive":
      return Duration.isPositive(duration)
    case "nonNegative":
      return !Duration.isNegative(duration)
    case "wholeSeconds": {
      const seconds = Duration.toSeconds(duration)
      return seconds >= 1 && Number.isSafeInteger(seconds)
    }
  }
}

/**
 * A value as the messages show it: durations formatted (`5m`), numbers marked as milliseconds.
 *
 * @category formatting
 * @since 0.1.0
 */
export const show = (input: unknown): string => {
  if (Duration.isDuration(input)) return Duration.format(input)
  if (typeof input === "number") return `${input} (a number is milliseconds)`
  if (typeof input === "bigint") return `${input}n (a bigint is nanoseconds)`
  if (typeof input === "string") return JSON.stringify(input)
  return JSON.stringify(input) ?? String(input)
}

/**
 * Decodes one duration by a rule; fails with the message `<rule>, got <value>` (prefix it with the option's name).
 *
 * @category decoding
 * @since 0.1.0
 */
export const check = (input: unknown, rule: Rule): Result.Result<Duration.Duration, string> => {
  const parsed = parse(input)
  return Option.isSome(parsed) && satisfies(parsed.value, rule)
    ? Result.succeed(parsed.value)
    : Result.fail(`${ruleText[rule]}, got ${show(input)}`)
}

/**
 * {@link check} with a default for an absent option (`undefined`).
 *
 * @category decoding
 * @since 0.1.0
 */
export const checkOr = (input: unknown, rule: Rule, fallback: Duration.Duration): Result.Result<Duration.Duration, string> =>
  input === undefined ? Result.succeed(fallback) : check(input, rule)

const AnyInput = Schema.declare<Duration.Input>((_u): _u is Duration.Input => true, {
  identifier: "Duration.Input"
})

/**
 * The rule as a schema: encoded a `Duration.Input`, decoded a `Duration`; a broken rule is an `InvalidValue` issue
 * with {@link check}'s message.
 *
 * @category schemas
 * @since 0.1.0
 */
export const schema = (rule: Rule): Schema.decodeTo<Schema.Duration, Schema.declare<Duration.Input>> =>
  AnyInput.pipe(
    Schema.decodeTo(
      Schema.Duration,
      SchemaTransformation.transformEffect({
        decode: (input, options) =>
          Result.match(check(input, rule), {
            onSuccess: Effect.succeed,
            onFailure: (message) => Effect.fail(new SchemaIssue.InvalidValue({ message }, input, options))
          }),
        encode: (duration: Duration.Duration) => Effect.succeed<Duration.Input>(duration)
      })
    )
  )
