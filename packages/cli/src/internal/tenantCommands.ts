// `tenants list | add | remove | migrate`: the tenant catalog (`PgTenants`) and each tenant's health.
import { PgTenants, TenantError } from "@whizbang/postgres"
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag, Prompt } from "effect/cli"
import { databaseFailure, invalidInput, refused } from "../OperationError.js"
import * as Tenants from "../Tenants.js"
import { output, root, withCatalog, yesFlag } from "./context.js"
import { orFailure } from "./database.js"
import { age, count, table } from "./render.js"
import { positiveInt } from "./validate.js"

const tenantId = Argument.String("id").pipe(Argument.withDescription("the tenant's id (its schema is the prefix and the id)"))

const catalog = Effect.service(PgTenants.PgTenants)

const day = (iso: string | null): string => (iso === null ? "-" : iso.replace("T", " ").slice(0, 19))

const healthText = (t: Tenants.TenantHealth): ReadonlyArray<string> =>
  t.error !== null
    ? ["?", "?", "?", `unreadable: ${t.error}`]
    : t.pending === null
      ? ["-", "-", "-", ""]
      : [count(t.pending), t.pending === 0 ? "-" : age(t.lagSeconds), count(t.deadLetters ?? 0), ""]

export const renderOverview = (o: Tenants.Overview): string => {
  // The last column, the reason a tenant is unreadable, only when one is.
  const notes = o.shown.some((t) => t.error !== null)
  const rows = o.shown.map((t) => {
    const [pending, lag, dead, note] = healthText(t)
    return [t.id, t.schema, t.state, day(t.createdAt), day(t.migratedAt), pending!, lag!, dead!, ...(notes ? [note!] : [])]
  })
  const headers = ["TENANT", "SCHEMA", "STATE", "CREATED", "MIGRATED", "PENDING", "LAG", "DEAD LETTERS", ...(notes ? ["PROBLEM"] : [])]
  const lines = [table(headers, rows)]
  if (o.shown.length < o.tenants) lines.push(`  … the worst ${count(o.shown.length)} of ${count(o.tenants)} by lag (--top N for more)`)
  lines.push(
    "",
    `TOTAL ${count(o.tenants)} tenant(s) (${count(o.active)} active${o.inTransition === 0 ? "" : `, ${count(o.inTransition)} being added or removed`}` +
      `${o.unreadable === 0 ? "" : `, ${count(o.unreadable)} unreadable`}): ${count(o.totals.pending)} pending in ${count(o.totals.lagging)} tenant(s), ` +
      `max lag ${o.totals.maxLagSeconds === null ? "-" : age(o.totals.maxLagSeconds)}, ${count(o.totals.deadLetters)} dead letter(s)`
  )
  return lines.join("\n")
}

const list = Command.make(
  "list",
  { top: Flag.Int("top").pipe(Flag.withDescription("show the worst N tenants by lag"), Flag.withDefault(20)) },
  (flags) =>
    withCatalog(
      Effect.gen(function* () {
        const top = yield* positiveInt(flags.top, "top")
        yield* output(yield* Tenants.overview({ top }), renderOverview)
      })
    )
).pipe(
  Command.withDescription(
    "Every tenant (id, schema, state, created, migrated) with its pending work, lag and dead letters: the worst --top (20) by lag, and a totals line."
  )
)

const add = Command.make("add", { id: tenantId }, (args) =>
  withCatalog(
    Effect.gen(function* () {
      const tenants = yield* catalog
      const tenant = yield* tenants.add(args.id).pipe(Effect.mapError(Tenants.fromTenantError))
      yield* output(
        { id: tenant.id, schema: tenant.schema, state: tenant.state, createdAt: tenant.createdAt.toISOString() },
        (t) => `added tenant ${t.id}: schema ${t.schema} created and migrated; the workers pick it up`
      )
    }),
    args.id
  )
).pipe(Command.withDescription("Add a tenant: create and migrate its schema, then list it active (finishes an add that died half-way)."))

/** The id typed back, or a refusal: `--confirm` and `--yes` answer without a terminal. */
const confirmation = (id: string, confirm: Option.Option<string>, yes: boolean, schema: string) =>
  Effect.gen(function* () {
    if (Option.isSome(confirm)) return confirm.value
    if (yes) return id
    const question = `remove tenant "${id}": drops schema ${schema} with every event and read model in it`
    if (process.stdin.isTTY !== true || process.stdout.isTTY !== true) {
      return yield* refused(`${question} — refusing without a terminal to confirm on; pass --confirm ${id} (or --yes)`)
    }
    return yield* Prompt.run(Prompt.String({ message: `${question}. Type the tenant id to confirm:` })).pipe(Effect.orElseSucceed(() => ""))
  })

const remove = Command.make(
  "remove",
  {
    id: tenantId,
    confirm: Flag.String("confirm").pipe(Flag.withDescription("the tenant's id again: confirms without asking"), Flag.optional),
    yes: yesFlag
  },
  (args) =>
    withCatalog(
      Effect.gen(function* () {
        const tenants = yield* catalog
        const id = yield* tenants.validate(args.id).pipe(Effect.mapError(Tenants.fromTenantError))
        if (id === PgTenants.defaultTenant) {
          return yield* refused("the default tenant holds the service's own schema and cannot be removed")
        }
        const found = (yield* orFailure(tenants.list)).find((t) => t.id === id)
        if (found === undefined)
          return yield* Effect.fail(Tenants.fromTenantError(new TenantError.UnknownTenant({ tenantId: id, state: undefined })))
        const typed = yield* confirmation(id, args.confirm, args.yes, found.schema)
        if (typed.trim() !== id) return yield* refused(`not confirmed ("${typed.trim()}" is not "${id}"); nothing changed`)
        yield* tenants.remove(id, { confirm: typed.trim() }).pipe(Effect.mapError(Tenants.fromTenantError))
        yield* output({ id, schema: found.schema, removed: true }, (r) => `removed tenant ${r.id}: schema ${r.schema} dropped`)
      }),
      args.id
    )
).pipe(
  Command.withDescription(
    "Remove a tenant: drops its schema (every event and read model in it) and its catalog entry. Asks for the id to be typed again; --confirm <id> or --yes without a terminal. The default tenant cannot be removed."
  )
)

/** `host:port` of a worker node. */
const node = (value: string) => {
  const match = /^(.+):(\d{1,5})$/.exec(value.trim())
  const port = match === null ? Number.NaN : Number(match[2])
  return match !== null && port > 0 && port < 65_536
    ? Effect.succeed({ host: match[1]!, port })
    : Effect.fail(invalidInput("to", `--to must be host:port of a worker node (got "${value}")`))
}

const move = Command.make(
  "move",
  { id: tenantId, to: Flag.String("to").pipe(Flag.withDescription("the worker node to move the tenant's schema to, host:port")) },
  (args) =>
    withCatalog(
      Effect.gen(function* () {
        const to = yield* node(args.to)
        const tenants = yield* catalog
        const report = yield* tenants.move(args.id, to).pipe(Effect.mapError(Tenants.fromTenantError))
        yield* output(
          {
            id: report.tenantId,
            schema: report.schema,
            from: `${report.from.host}:${report.from.port}`,
            to: `${report.to.host}:${report.to.port}`,
            moved: report.moved,
            millis: report.millis
          },
          (r) =>
            r.moved
              ? `moved tenant ${r.id} (schema ${r.schema}) from ${r.from} to ${r.to} in ${(r.millis / 1000).toFixed(1)} s; its appends waited while it was copied`
              : `tenant ${r.id} (schema ${r.schema}) is on ${r.to} already; nothing moved`
        )
      }),
      args.id
    )
).pipe(
  Command.withDescription(
    "Citus only: move a tenant's schema to another worker node while the service runs (citus_schema_move, its writes blocked while it is copied: appends wait, nothing is lost). The default tenant is the service's own schema."
  )
)

/** Progress on stderr: one line per tenant up to 100 tenants, else about one per percent (and the last). */
const progressLine =
  (json: boolean) =>
  (done: number, total: number, tenantId: string): Effect.Effect<void> =>
    json || (total > 100 && done % Math.ceil(total / 100) !== 0 && done !== total)
      ? Effect.void
      : Console.error(`migrated ${count(done)}/${count(total)} (last: ${tenantId})`)

const migrate = Command.make(
  "migrate",
  {
    concurrency: Flag.Int("concurrency").pipe(Flag.withDescription("tenants migrated at once"), Flag.withDefault(4))
  },
  (flags) =>
    withCatalog(
      Effect.gen(function* () {
        const { json } = yield* root
        const concurrency = yield* positiveInt(flags.concurrency, "concurrency")
        const tenants = yield* catalog
        const report = yield* orFailure(tenants.migrate({ concurrency, onProgress: progressLine(json) }))
        if (report.failed.length > 0) {
          const failures = report.failed.map((f) => `${f.tenantId}: ${f.error.message}`).join("; ")
          return yield* Effect.fail(
            databaseFailure({
              message: `${report.failed.length} of ${report.tenants} tenant(s) failed to migrate (${failures}); the others are migrated: fix them and run whizbang tenants migrate again`
            })
          )
        }
        yield* output(
          { tenants: report.tenants, migrated: report.migrated, failed: [] },
          (r) =>
            `${count(r.tenants)} tenant(s) at this release's migrations: ${count(r.migrated.length)} migrated now, ${count(r.tenants - r.migrated.length)} already current`
        )
      })
    )
).pipe(
  Command.withDescription(
    "Migrate every tenant's schema to this release (--concurrency at a time) with progress; idempotent and resumable: run it again after a failure, the tenants done are skipped. Exits 1 naming the tenants that failed."
  )
)

export const tenants = Command.make("tenants").pipe(
  Command.withDescription(
    "The service's tenants (a tenant is a schema): list with lag and dead letters, add, remove, migrate, move (Citus)."
  ),
  Command.withSubcommands([list, add, remove, migrate, move])
)
