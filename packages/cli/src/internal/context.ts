// The root command and its shared flags, the database connection they describe, output and confirmation.
import { PgClient, PgTenants, PostgresError } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Console, Effect, Option } from "effect"
import { Command, Flag, Prompt } from "effect/cli"
import { invalidInput, OperationError, refused } from "../OperationError.js"
import { fromTenantError } from "../Tenants.js"
import { orFailure } from "./database.js"

export const root = Command.make("whizbang").pipe(
  Command.withDescription("Operate Whizbang perspectives in a PostgreSQL service schema."),
  Command.withSharedFlags({
    databaseUrl: Flag.String("database-url").pipe(Flag.withDescription("PostgreSQL URL (default: $DATABASE_URL)"), Flag.optional),
    schema: Flag.String("schema").pipe(Flag.withDescription("service schema"), Flag.withDefault("whizbang")),
    json: Flag.Boolean("json").pipe(Flag.withDescription("machine-readable JSON on stdout"), Flag.withDefault(false)),
    tenant: Flag.String("tenant").pipe(
      Flag.withDescription("run on this tenant's schema (see whizbang tenants list); default: the service schema, tenant default"),
      Flag.optional
    ),
    tenantPrefix: Flag.String("tenant-prefix").pipe(
      Flag.withDescription("the service's tenant schema prefix, as configured (default tenant_)"),
      Flag.optional
    ),
    tenantCatalog: Flag.String("tenant-catalog").pipe(
      Flag.withDescription("the schema of the tenant catalog, as configured (default <schema>_tenants)"),
      Flag.optional
    )
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

interface RootFlags {
  readonly databaseUrl: Option.Option<string>
  readonly schema: string
  readonly tenant: Option.Option<string>
  readonly tenantPrefix: Option.Option<string>
  readonly tenantCatalog: Option.Option<string>
}

/** The tenant flags as `PgTenants` options, checked without connecting. */
const tenantOptions = (flags: RootFlags) =>
  PgTenants.decodeOptions(
    { prefix: Option.getOrUndefined(flags.tenantPrefix), catalogSchema: Option.getOrUndefined(flags.tenantCatalog) },
    flags.schema
  ).pipe(
    Effect.mapError((e) =>
      e.option === "prefix"
        ? invalidInput("tenant-prefix", `--tenant-prefix: ${e.message}`)
        : e.option === "catalogSchema"
          ? invalidInput("tenant-catalog", `--tenant-catalog: ${e.message}`)
          : invalidInput(e.option, e.message)
    )
  )

/** Runs `effect` with a `PgClient` of the service schema (`--database-url`, else `DATABASE_URL`; `--schema`). */
const connect = <A, R>(flags: RootFlags, effect: Effect.Effect<A, OperationError, R>) =>
  Effect.gen(function* () {
    const url = Option.getOrUndefined(flags.databaseUrl) ?? process.env.DATABASE_URL
    if (url === undefined || url === "") return yield* invalidInput("database-url", "no database: pass --database-url or set DATABASE_URL")
    const client = PgClient.layer({ url, schema: flags.schema, maxConnections: 2, applicationName: "whizbang-cli" })
    return yield* Effect.provide(effect, client).pipe(
      Effect.catchTag("PostgresConfigError", (e) => Effect.fail(invalidInput(e.option, e.message)))
    )
  })

/** A missing table explained: the wrong `--schema`, or a tenant's schema not migrated. */
const explained = <A, R>(
  effect: Effect.Effect<A, OperationError, R>,
  tenant: { readonly id: string; readonly schema: string } | undefined,
  schema: string
) =>
  Effect.catchIf(effect, isUndefinedTable, (e) =>
    tenant === undefined
      ? Effect.flatMap(wrongSchema(schema, e), Effect.fail)
      : Effect.fail(
          new OperationError({
            reason: e.reason,
            message: `${e.message} in schema "${tenant.schema}" of tenant "${tenant.id}": apply this release's migrations (whizbang tenants migrate)`
          })
        )
  )

/**
 * Provides a `PgClient` for the shared flags (`--database-url`, else `DATABASE_URL`; `--schema`): with `--tenant`,
 * one bound to that tenant's schema. The id is checked before anything connects (a hostile id reaches no SQL),
 * then looked up in the catalog: an unknown tenant is `NotFound`. `--tenant default` is the service schema.
 */
export const withDatabase = <A, R>(effect: Effect.Effect<A, OperationError, R>) =>
  Effect.gen(function* () {
    const flags = yield* root
    if (Option.isNone(flags.tenant)) return yield* connect(flags, explained(effect, undefined, flags.schema))
    const options = yield* tenantOptions(flags)
    const id = yield* PgTenants.validateId(flags.tenant.value, options.prefix).pipe(Effect.mapError(fromTenantError))
    return yield* connect(
      flags,
      Effect.gen(function* () {
        const client = yield* PgClient.PgClient
        const schema =
          id === PgTenants.defaultTenant
            ? flags.schema
            : (yield* Effect.flatMap(orFailure(PgTenants.make(options)), (catalog) => Effect.mapError(catalog.get(id), fromTenantError)))
                .schema
        return yield* Effect.provideService(explained(effect, { id, schema }, schema), PgClient.PgClient, client.forSchema(schema))
      })
    )
  })

/**
 * Provides the tenant catalog (`PgTenants`, for the tenant flags) and a `PgClient` of the service schema, for
 * `whizbang tenants`: `--tenant` does not apply there (the tenant is the command's argument). `tenantId`, the
 * command's argument, is checked before anything connects: a hostile id reaches no SQL.
 */
export const withCatalog = <A, R>(effect: Effect.Effect<A, OperationError, R>, tenantId?: string) =>
  Effect.gen(function* () {
    const flags = yield* root
    if (Option.isSome(flags.tenant)) {
      return yield* invalidInput("tenant", "--tenant does not apply to whizbang tenants: name the tenant as the command's argument")
    }
    const options = yield* tenantOptions(flags)
    if (tenantId !== undefined) yield* PgTenants.validateId(tenantId, options.prefix).pipe(Effect.mapError(fromTenantError))
    return yield* connect(
      flags,
      Effect.flatMap(orFailure(PgTenants.make(options)), (catalog) => Effect.provideService(effect, PgTenants.PgTenants, catalog))
    )
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
