// The root command and its shared flags, the database connection they describe, output and confirmation.
import { PgClient, PgOperations, PostgresError } from "@whizbang/postgres"
import { Console, Effect, Option } from "effect"
import { Command, Flag, Prompt } from "effect/cli"
import { invalidInput, OperationError, refused } from "../OperationError.js"

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
    return yield* Effect.provide(
      Effect.catchIf(effect, isUndefinedTable, (e) => Effect.flatMap(wrongSchema(flags.schema, e), Effect.fail)),
      client
    ).pipe(Effect.catchTag("PostgresConfigError", (e) => Effect.fail(invalidInput(e.option, e.message))))
  })

const isUndefinedTable = (e: OperationError): boolean =>
  e.reason._tag === "DatabaseFailure" &&
  e.reason.cause instanceof PostgresError.PostgresError &&
  e.reason.cause.reason._tag === "UndefinedTable"

/**
 * A missing `wh_` table almost always means the wrong `--schema` (the CLI defaults to `whizbang`, a service often
 * uses its own): the message says so and names the schemas of this database that hold Whizbang tables.
 */
const wrongSchema = (schema: string, error: OperationError) =>
  Effect.gen(function* () {
    const found = yield* PgClient.PgClient.use((client) => PgOperations.Schemas.withWhizbangTables(client)).pipe(
      Effect.map((rows) => rows.map((r) => r.schema)),
      Effect.orElseSucceed(() => undefined)
    )
    const hint =
      found === undefined
        ? `pass --schema with the service's schema (default "whizbang")`
        : found.includes(schema)
          ? `schema "${schema}" has Whizbang tables but not this one: apply this release's migrations (whizbang migrate --schema ${schema})`
          : `pass --schema with the service's schema (default "whizbang"); schemas with Whizbang tables in this database: ${found.length === 0 ? "none (is --database-url the service's database?)" : found.join(", ")}`
    return new OperationError({ reason: error.reason, message: `${error.message} in schema "${schema}": ${hint}` })
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
