/**
 * The `whizbang` command line: `migrate`, `status`, `failed`, `dead-letters list|show|retry|discard`,
 * `rewind`, `rebuild`, `work list|remove`, `locks list|release`, `perspectives`, `cutover`, `rollback`, `retire` and
 * `tenants list|add|remove|migrate`, against `--database-url` (default `DATABASE_URL`) and a service schema (`--schema`,
 * default `whizbang`), or with `--tenant <id>` that tenant's schema. Tables for people by default, `--json` for scripts.
 *
 * Exit codes: 0 success; 1 the operation failed (database); 2 bad input (flags, arguments, ids, names, an event type
 * the perspective does not handle, an invalid tenant id); 3 not found (also a perspective the service did not register, a
 * tenant not in the catalog); 4 refused (not
 * confirmed, no terminal without `--yes`, `locks release` or `work remove` of a registered perspective without
 * `--force`, a rebuild of a version building, ready or retired, a version not ready to go live); 5 timed out (a
 * cutover or rollback; nothing switched). A refusal writes nothing.
 *
 * @since 0.1.0
 */
import { readFileSync } from "node:fs"
import { Console, Effect, Logger } from "effect"
import { CliError, Command } from "effect/cli"
import { root } from "./internal/context.js"
import { dashboard } from "./internal/dashboardCommand.js"
import { deadLetters } from "./internal/deadLetterCommands.js"
import { locks } from "./internal/lockCommands.js"
import { rebuild, rewind } from "./internal/rewindCommands.js"
import { failed, migrate, status } from "./internal/statusCommands.js"
import { cutover, perspectives, retire, rollback } from "./internal/versionCommands.js"
import { tenants } from "./internal/tenantCommands.js"
import { work } from "./internal/workCommands.js"
import { exitCode, OperationError } from "./OperationError.js"

/**
 * The root command with every subcommand.
 *
 * @category constructors
 * @since 0.1.0
 */
export const command = root.pipe(
  Command.withSubcommands([
    migrate,
    status,
    failed,
    deadLetters,
    rewind,
    rebuild,
    work,
    locks,
    perspectives,
    cutover,
    rollback,
    retire,
    tenants,
    dashboard
  ])
)

/**
 * The CLI's version, printed by `--version`: read from the package's own `package.json` (one level above both
 * `src/` and `dist/`), so a release bump needs no code change.
 *
 * @category constants
 * @since 0.1.0
 */
export const version: string = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { readonly version: string }
).version

const reportError = (argv: ReadonlyArray<string>, error: OperationError) =>
  Effect.gen(function* () {
    if (argv.includes("--json")) {
      yield* Console.log(JSON.stringify({ error: { reason: error.reason._tag, message: error.message } }, null, 2))
    }
    yield* Console.error(`whizbang: ${error.message}`)
    return exitCode(error.reason)
  })

/**
 * Runs the CLI on `argv` (without the node and script paths) and returns the process exit code. Parse errors
 * and help are rendered by the CLI library; operation errors are printed to stderr (and as JSON on stdout with
 * `--json`). Needs the platform services (`NodeServices.layer`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = (argv: ReadonlyArray<string>) =>
  Command.runWith(command, { version })(argv).pipe(
    Effect.as(0),
    // Logs go to stderr: stdout carries only the command's output, so `--json` stays parseable.
    Effect.provideService(Logger.LogToStderr, true),
    Effect.catchIf(
      (error): error is OperationError => error instanceof OperationError,
      (error) => reportError(argv, error)
    ),
    Effect.catchIf(CliError.isCliError, (error) =>
      // Help asked for is a success; help shown because of a parse error (`errors` non-empty) is bad input.
      Effect.succeed(error._tag === "ShowHelp" && error.errors.length === 0 ? 0 : 2)
    )
  )
