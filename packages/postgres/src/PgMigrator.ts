/**
 * Applies the embedded migrations (`migrations/` at the repository root, embedded by
 * `scripts/embed-migrations.mjs`) into the service schema of the `PgClient` in context.
 *
 * **How the schema is chosen**: drizzle-kit generates every statement against the placeholder schema
 * `"__whizbang_schema__"` (see `src/schema/serviceSchema.ts`), and the migrator replaces the placeholder with
 * the client's validated schema before running a statement. Since the schema is validated against
 * `/^[a-z_][a-z0-9_]{0,62}$/`, the replacement cannot inject SQL, and because the placeholder is not a real
 * schema, a reference the rewrite missed fails instead of writing into another service's schema. The client's
 * `search_path` is the service schema too, so even an unqualified name in a hand-written migration lands there.
 *
 * **Bookkeeping**: `<schema>.wh_migrations (idx, tag, hash, applied_at)`, one row per applied migration, so
 * services in other schemas of the same database migrate independently.
 *
 * **Concurrency**: every step runs in its own transaction that first takes
 * `pg_advisory_xact_lock(hashtextextended('@whizbang/postgres/PgMigrator:<schema>', 0))` and re-reads the
 * bookkeeping under the lock, so instances starting together apply each migration exactly once (the others wait,
 * then see it applied). Running it again is a no-op.
 *
 * **Citus**: when the database has the `citus` extension and `citus.enable_schema_based_sharding` is on for the
 * session (`ALTER DATABASE ... SET` or `ALTER ROLE ... SET`, Citus's own switch), the service schema becomes a
 * distributed schema: it is created as a local schema on the coordinator, migrated, then distributed
 * (`citus_schema_distribute`, placing it on a worker node) in the last step's transaction. Migrating first and
 * distributing after lets every migration run as written, also the early ones that created triggers (migration 0019
 * drops them: Citus refuses triggers on distributed tables). Later migrations run on the distributed schema, so they
 * must stay within what Citus runs (see the README, "Outgrowing one database"). An existing local schema (a
 * database that was plain PostgreSQL before) is distributed the same way at the next run. With the switch off, the
 * schema stays local to the coordinator.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { type EmbeddedMigration, migrations as embedded } from "./internal/migrations.generated.js"
import { PgClient, type Shape } from "./PgClient.js"
import { MigrationError, type PostgresError } from "./PostgresError.js"
import * as MigrationLock from "./internal/migrationLock.js"
import { SCHEMA_PLACEHOLDER } from "./internal/schemaPlaceholder.js"
import * as Sql from "./sql/migrations.js"

/**
 * @category models
 * @since 0.1.0
 */
export interface Report {
  readonly schema: string
  /** Tags applied by this run. */
  readonly applied: ReadonlyArray<string>
  /** Tags that were already applied (by an earlier run or a concurrent instance). */
  readonly alreadyApplied: ReadonlyArray<string>
}

/**
 * The migrations this version of the package ships, in order.
 *
 * @category constants
 * @since 0.1.0
 */
export const migrations: ReadonlyArray<EmbeddedMigration> = embedded

const lock = (client: Shape) => MigrationLock.take(client)

type CitusFacts = typeof Sql.CitusFacts.Type

/**
 * The schema's Citus state: `local` (no Citus, or a schema Citus does not distribute), `wanted` (Citus is installed
 * and its schema-sharding switch is on, the schema is not distributed yet) or `distributed`.
 */
const citusState = (client: Shape, known?: CitusFacts) =>
  (known === undefined ? Sql.citusFacts(client) : Effect.succeed(known)).pipe(
    Effect.flatMap((row) =>
      row.citus
        ? Effect.map(Sql.distributed(client, { schema: client.schema }), (r) =>
            r.distributed ? "distributed" : row.wanted ? "wanted" : "local"
          )
        : Effect.succeed("local" as const)
    )
  )

/**
 * On a distributed schema, the functions planned once per connection (`SET plan_cache_mode = force_generic_plan`,
 * a plain-PostgreSQL optimisation, migration 0008) are planned at every call instead: Citus cannot plan an
 * INSERT ... SELECT with parameters as a generic plan ("could not create distributed plan ... parameters in SQL
 * functions"). Idempotent; run after every migration run, so a migration that re-creates such a function is adapted
 * too.
 */
const adaptFunctions = (client: Shape) =>
  Sql.genericPlanFunctions(client, { schema: client.schema }).pipe(
    Effect.flatMap((rows) => Effect.forEach(rows, ({ fn }) => Sql.planAtEveryCall(client, { fn }), { discard: true }))
  )

const applyOne = (client: Shape, migration: EmbeddedMigration) =>
  client.withTransaction(
    Effect.gen(function* () {
      yield* lock(client)
      const applied = yield* Sql.appliedHash(client, { schema: client.schema, idx: migration.idx })
      if (Option.isSome(applied)) {
        if (applied.value.hash !== migration.hash) {
          return yield* new MigrationError({
            schema: client.schema,
            tag: migration.tag,
            message: `migration ${migration.tag} was applied with a different hash: applied migrations must not be edited`
          })
        }
        return false
      }
      // The migration's own SQL (drizzle-kit's output, embedded): DDL, no row read.
      for (const sql of migration.statements) {
        yield* client.query(sql.replaceAll(SCHEMA_PLACEHOLDER, client.schema))
      }
      yield* Sql.recordApplied(client, { schema: client.schema, idx: migration.idx, tag: migration.tag, hash: migration.hash })
      return true
    })
  )

/**
 * Whether every shipped migration is applied as shipped, with the Citus facts {@link citusState} starts from, in one
 * statement: a service of many tenants checks each tenant whose services it starts (the two statements it was cost
 * every tenant's start one round trip). A schema without the table (or without the schema) is not current.
 */
const isCurrent = (client: Shape): Effect.Effect<{ readonly current: boolean; readonly citus: CitusFacts | undefined }, PostgresError> =>
  Sql.appliedWithCitusFacts(client, { schema: client.schema }).pipe(
    Effect.map((rows) => {
      const applied = new Map(rows.map((row) => [row.idx, row.hash]))
      const first = rows[0]
      return {
        current: migrations.every((migration) => applied.get(migration.idx) === migration.hash),
        citus: first === undefined ? undefined : { citus: first.citus, wanted: first.wanted }
      }
    }),
    Effect.catchIf(
      // No table yet, or no schema yet (3F000).
      (e) => e.reason._tag === "UndefinedTable" || (e.reason._tag === "Unknown" && e.reason.code === "3F000"),
      () => Effect.succeed({ current: false, citus: undefined })
    )
  )

/**
 * Creates the schema and bookkeeping table if missing, then applies every pending migration, each in its own
 * transaction under the schema's advisory lock.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run: Effect.Effect<Report, PostgresError | MigrationError, PgClient> = Effect.suspend(() => migrate(true))

/**
 * {@link run} for a schema that must exist already (a tenant's, created by `PgTenants.add`): a schema that does not
 * exist (never added, or dropped by a removal) is a `MigrationError`, never created again.
 *
 * @category constructors
 * @since 0.6.0
 */
export const runExisting: Effect.Effect<Report, PostgresError | MigrationError, PgClient> = Effect.suspend(() => migrate(false))

const migrate = (create: boolean) =>
  Effect.gen(function* () {
    const client = yield* PgClient
    // A current schema costs one or two statements and no lock (a service of many tenants checks each tenant it
    // activates); anything else, an edited migration or a schema Citus should distribute, takes the locked path.
    const now = yield* isCurrent(client)
    if (now.current && (yield* citusState(client, now.citus)) !== "wanted") {
      return { schema: client.schema, applied: [], alreadyApplied: migrations.map((m) => m.tag) }
    }
    const schema = client.schema
    yield* client.withTransaction(
      Effect.gen(function* () {
        yield* lock(client)
        if (!create && (yield* Sql.schemaExists(client, { schema })) === 0) {
          return yield* new MigrationError({
            schema: client.schema,
            tag: migrations[0]!.tag,
            message: `schema "${client.schema}" does not exist (a tenant's schema is created by adding the tenant, and dropped by removing it)`
          })
        }
        // On Citus with schema sharding on, a schema created now would be distributed at once, and the first
        // migrations (triggers) could not run in it: it is created local and distributed after the migrations.
        yield* Sql.createLocally(client)
        yield* Sql.createSchema(client, { schema })
        yield* Sql.createBookkeeping(client, { schema })
      })
    )
    const applied: Array<string> = []
    const alreadyApplied: Array<string> = []
    for (const migration of migrations) {
      const didApply = yield* applyOne(client, migration)
      ;(didApply ? applied : alreadyApplied).push(migration.tag)
    }
    const distributed = yield* client.withTransaction(
      Effect.gen(function* () {
        yield* lock(client)
        const state = yield* citusState(client)
        if (state === "local") return false
        if (state === "wanted") yield* Sql.distribute(client, { schema: client.schema })
        yield* adaptFunctions(client)
        return true
      })
    )
    yield* Effect.logDebug("whizbang migrations", { schema: client.schema, applied, distributed })
    return { schema: client.schema, applied, alreadyApplied }
  })

/**
 * Tags of shipped migrations not yet applied in the client's schema (all of them when the schema or its
 * bookkeeping table does not exist). Takes no lock and changes nothing.
 *
 * @category constructors
 * @since 0.1.0
 */
export const pending: Effect.Effect<ReadonlyArray<string>, PostgresError, PgClient> = Effect.gen(function* () {
  const client = yield* PgClient
  const rows = yield* Sql.appliedIndexes(client, { schema: client.schema }).pipe(
    Effect.catchIf(
      (e) => e.reason._tag === "UndefinedTable",
      () => Effect.succeed([])
    )
  )
  const done = new Set(rows.map((row) => row.idx))
  return migrations.filter((migration) => !done.has(migration.idx)).map((migration) => migration.tag)
})

/**
 * Runs the migrations when the layer is built. Depend on `SchemaReady` instead when a service must not start
 * before the schema is ready.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<never, PostgresError | MigrationError, PgClient> = Layer.effectDiscard(run)
