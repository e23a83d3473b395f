/**
 * The schema-ready gate. A Postgres layer that needs the `wh_` tables requires `SchemaReady` in its
 * constructor (`yield* SchemaReady`), so the layer graph cannot build it before the migrations finished:
 * the gate is a dependency, not a flag that callers must remember to await. Built once per layer graph (layers
 * are memoized), so every dependent service shares one migration run.
 *
 * **When to use**: `SchemaReady.layer` when the service migrates its own schema at start-up (the default);
 * `SchemaReady.layerVerify` when a deploy step migrates and the service only checks (and may lack DDL rights).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { PgClient } from "./PgClient.js"
import * as PgMigrator from "./PgMigrator.js"
import { MigrationError, type PostgresError } from "./PostgresError.js"

/**
 * Proof that the service schema holds every migration this package ships.
 *
 * @category services
 * @since 0.1.0
 */
export class SchemaReady extends Context.Service<
  SchemaReady,
  {
    readonly schema: string
    /** What start-up did; empty `applied` when the schema was already current (or after `layerVerify`). */
    readonly report: PgMigrator.Report
  }
>()("@whizbang/postgres/SchemaReady") {}

/**
 * Migrates the schema, then provides the gate.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<SchemaReady, PostgresError | MigrationError, PgClient> = Layer.effect(
  SchemaReady,
  Effect.map(PgMigrator.run, (report) => SchemaReady.of({ schema: report.schema, report }))
)

/**
 * {@link layer} for a schema that must exist already (a tenant's): pending migrations are applied, a missing schema
 * is a `MigrationError` (it is never created here; `PgTenants.add` creates it).
 *
 * @category layers
 * @since 0.6.0
 */
export const layerExisting: Layer.Layer<SchemaReady, PostgresError | MigrationError, PgClient> = Layer.effect(
  SchemaReady,
  Effect.map(PgMigrator.runExisting, (report) => SchemaReady.of({ schema: report.schema, report }))
)

/**
 * Provides the gate only if every shipped migration is already applied; fails with a `MigrationError` naming the
 * first pending one otherwise. Changes nothing.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerVerify: Layer.Layer<SchemaReady, PostgresError | MigrationError, PgClient> = Layer.effect(
  SchemaReady,
  Effect.gen(function* () {
    const { schema } = yield* PgClient
    const pending = yield* PgMigrator.pending
    if (pending.length > 0) {
      return yield* new MigrationError({
        schema,
        tag: pending[0]!,
        message: `schema "${schema}" is not migrated: ${pending.length} pending migration(s), first ${pending[0]}`
      })
    }
    const alreadyApplied = PgMigrator.migrations.map((migration) => migration.tag)
    return SchemaReady.of({ schema, report: { schema, applied: [], alreadyApplied } })
  })
)
