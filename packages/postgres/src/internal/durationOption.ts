/** A duration option of this package decoded by its `DurationOption` rule, or a `PostgresConfigError` naming it. */
import { DurationOption } from "@whizbang/core/internal"
import { type Duration, Effect, Result } from "effect"
import { PostgresConfigError } from "../PostgresError.js"

export const decode = (
  option: string,
  input: unknown,
  rule: DurationOption.Rule,
  fallback: Duration.Duration
): Effect.Effect<Duration.Duration, PostgresConfigError> =>
  Result.match(DurationOption.checkOr(input, rule, fallback), {
    onSuccess: Effect.succeed,
    onFailure: (message) => Effect.fail(new PostgresConfigError({ option, message: `${option} ${message}` }))
  })
