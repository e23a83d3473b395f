/**
 * SQL identifiers that cannot be bound as parameters (schema names, later `wh_per_<name>` tables) are
 * validated against a strict pattern and then always double-quoted, so a hostile name fails at start-up
 * with a typed error instead of reaching SQL text.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { PostgresConfigError } from "../PostgresError.js"

/**
 * Lower-case letter or underscore, then up to 62 lower-case letters, digits or underscores (63 bytes is
 * Postgres' identifier limit; longer names would be silently truncated).
 *
 * @category constants
 * @since 0.1.0
 */
export const pattern: RegExp = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * @category predicates
 * @since 0.1.0
 */
export const isValid = (value: unknown): value is string => typeof value === "string" && pattern.test(value)

/**
 * Validates an identifier; `option` names the setting in the error.
 *
 * @category validation
 * @since 0.1.0
 */
export const validate = (value: unknown, option: string): Effect.Effect<string, PostgresConfigError> =>
  isValid(value)
    ? Effect.succeed(value)
    : Effect.fail(
        new PostgresConfigError({
          option,
          message: `${option} must match ${pattern} (got ${JSON.stringify(value)})`
        })
      )

/**
 * Validates a schema name: an identifier that is not in the `pg_` namespace Postgres reserves for itself.
 *
 * @category validation
 * @since 0.1.0
 */
export const validateSchema = (value: unknown, option = "schema"): Effect.Effect<string, PostgresConfigError> =>
  Effect.flatMap(validate(value, option), (name) =>
    name.startsWith("pg_")
      ? Effect.fail(new PostgresConfigError({ option, message: `${option} must not start with "pg_" (got "${name}")` }))
      : Effect.succeed(name)
  )

/**
 * Double-quotes a validated identifier (quoting also keeps reserved words such as `user` usable).
 *
 * @category formatting
 * @since 0.1.0
 */
export const quote = (identifier: string): string => `"${identifier.replaceAll('"', '""')}"`
