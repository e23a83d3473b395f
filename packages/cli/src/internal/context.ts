// The root command and its shared flags, the database connection they describe, output and confirmation.
import { PgClient } from "@whizbang/postgres"
import { Console, Effect, Option } from "effect"
import { Command, Flag, Prompt } from "effect/cli"
import { invalidInput, type OperationError, refused } from "../OperationError.js"

export const root = Command.make("whizbang").pipe(
  Command.withDescription("Operate Whizbang perspectives in a PostgreSQL service schema."),
  Command.withSharedFlags({
    databaseUrl: Flag.String("database-url").pipe(Flag.withDescription("PostgreSQL URL (default: $DATABASE_URL)"), Flag.optional),
    schema: Flag.String("schema").pipe(Flag.withDescription("service schema"), Flag.withDefault("whizbang")),
    json: Flag.Boolean("json").pipe(Flag.withDescription("machine-readable JSON on stdout"), Flag.withDefault(false))
  })
)

/** Heartbeat age after which an instance counts as dead (`status`, `perspectives`), as the watchdog judges it. */
export const deadInstanceAfterFlag = Flag.Int("dead-instance-after").pipe(
  Flag.withDescription("heartbeat age (seconds) after which an instance counts as dead"),
  Flag.withDefault(30)
)

export const yesFlag = Flag.Boolean("yes").pipe(
  Flag.withAlias("y"),
  Flag.withDescription("do not ask for confirmation"),
  Flag.withDefault(false)
)

/** Provides a `PgClient` for the shared flags (`--database-url`, else `DATABASE_URL`; `--schema`). */
export const withDatabase = <A, R>(effect: Effect.Effect<A, OperationError, R>) =>
  Effect.gen(function* () {
    const flags = yield* root
    const url = Option.getOrUndefined(flags.databaseUrl) ?? process.env.DATABASE_URL
    if (url === undefined || url === "") return yield* invalidInput("database-url", "no database: pass --database-url or set DATABASE_URL")
    const client = PgClient.layer({ url, schema: flags.schema, maxConnections: 2, applicationName: "whizbang-cli" })
    return yield* Effect.provide(effect, client).pipe(
      Effect.catchTag("PostgresConfigError", (e) => Effect.fail(invalidInput(e.option, e.message)))
    )
  })

/** Prints `value` as JSON with --json, else the human rendering. */
export const output = <A>(value: A, human: (value: A) => string) =>
  Effect.flatMap(root, (flags) => Console.log(flags.json ? JSON.stringify(value, null, 2) : human(value)))

/**
 * Asks before a destructive step. `--yes` skips the question; without a TTY (a script, CI) and without `--yes`
 * the step is refused rather than run silently.
 */
export const confirm = (message: string, yes: boolean) =>
  Effect.gen(function* () {
    if (yes) return
    if (process.stdin.isTTY !== true || process.stdout.isTTY !== true) {
      return yield* refused(`${message} — refusing without a terminal to confirm on; pass --yes`)
    }
    const answer = yield* Prompt.run(Prompt.Confirm({ message, initial: false })).pipe(Effect.orElseSucceed(() => false))
    if (!answer) return yield* refused("not confirmed; nothing changed")
  })
