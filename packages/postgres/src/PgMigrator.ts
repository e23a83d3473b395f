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
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import * as Identifier from "./internal/identifier.js"
import { type EmbeddedMigration, migrations as embedded } from "./internal/migrations.generated.js"
import { PgClient, type Shape } from "./PgClient.js"
import { MigrationError, type PostgresError } from "./PostgresError.js"
import * as MigrationLock from "./internal/migrationLock.js"
import { SCHEMA_PLACEHOLDER } from "./internal/schemaPlaceholder.js"

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

const applyOne = (client: Shape, migration: EmbeddedMigration) =>
  client.withTransaction(
    Effect.gen(function* () {
      const schema = Identifier.quote(client.schema)
      yield* lock(client)
      const rows = yield* client.query<{ hash: string }>(`SELECT hash FROM ${schema}.wh_migrations WHERE idx = $1`, [migration.idx])
      if (rows.length > 0) {
        if (rows[0]!.hash !== migration.hash) {
          return yield* new MigrationError({
            schema: client.schema,
            tag: migration.tag,
            message: `migration ${migration.tag} was applied with a different hash: applied migrations must not be edited`
          })
        }
        return false
      }
      for (const sql of migration.statements) {
        yield* client.query(sql.replaceAll(SCHEMA_PLACEHOLDER, client.schema))
      }
      yield* client.query(`INSERT INTO ${schema}.wh_migrations (idx, tag, hash) VALUES ($1, $2, $3)`, [
        migration.idx,
        migration.tag,
        migration.hash
      ])
      return true
    })
  )

const isCurrent = (client: Shape): Effect.Effect<boolean, PostgresError> =>
  client.query<{ idx: number; hash: string }>(`SELECT idx, hash FROM ${Identifier.quote(client.schema)}.wh_migrations`).pipe(
    Effect.map((rows) => {
      const applied = new Map(rows.map((row) => [row.idx, row.hash]))
      return migrations.every((migration) => applied.get(migration.idx) === migration.hash)
    }),
    Effect.catchIf(
      // No table yet, or no schema yet (3F000).
      (e) => e.reason._tag === "UndefinedTable" || (e.reason._tag === "Unknown" && e.reason.code === "3F000"),
      () => Effect.succeed(false)
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
    // A current schema costs one statement and no lock (a service of many tenants checks each tenant it activates);
    // anything else, an edited migration included, takes the locked path below, which reports it.
    if (yield* isCurrent(client)) return { schema: client.schema, applied: [], alreadyApplied: migrations.map((m) => m.tag) }
    const schema = Identifier.quote(client.schema)
    yield* client.withTransaction(
      Effect.gen(function* () {
        yield* lock(client)
        if (!create && (yield* client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [client.schema])).length === 0) {
          return yield* new MigrationError({
            schema: client.schema,
            tag: migrations[0]!.tag,
            message: `schema "${client.schema}" does not exist (a tenant's schema is created by adding the tenant, and dropped by removing it)`
          })
        }
        yield* client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
        yield* client.query(
          `CREATE TABLE IF NOT EXISTS ${schema}.wh_migrations (
        idx integer PRIMARY KEY,
        tag text NOT NULL,
        hash text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`
        )
      })
    )
    const applied: Array<string> = []
    const alreadyApplied: Array<string> = []
    for (const migration of migrations) {
      const didApply = yield* applyOne(client, migration)
      ;(didApply ? applied : alreadyApplied).push(migration.tag)
    }
    yield* Effect.logDebug("whizbang migrations", { schema: client.schema, applied })
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
  const rows = yield* client.query<{ idx: number }>(`SELECT idx FROM ${Identifier.quote(client.schema)}.wh_migrations`).pipe(
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
