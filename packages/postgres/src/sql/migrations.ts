/**
 * The migrator's statements (`PgMigrator`): its bookkeeping table `wh_migrations` in the schema it migrates, the
 * catalog facts it decides on (Citus, the schema's existence, the functions to adapt), and the schema's lock. The
 * schema is a request's, quoted here; every value is a bound parameter.
 */
import { Schema } from "effect"
import { Migrations as m } from "../internal/columns.js"
import * as Identifier from "../internal/identifier.js"
import * as Operation from "../internal/operation.js"

/** A schema, unquoted. */
interface InSchema {
  readonly schema: string
}

const bookkeeping = (schema: string) => `${Identifier.quote(schema)}.${m.table}`

/**
 * Whether Citus is installed, and whether its schema-sharding switch is on.
 *
 * @category models
 * @since 0.6.0
 */
export const CitusFacts = Schema.Struct({ citus: Schema.Boolean, wanted: Schema.Boolean })

const citusFactsSql = `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus,
  coalesce(current_setting('citus.enable_schema_based_sharding', true), 'off') = 'on' AS wanted`

/**
 * {@link CitusFacts} of the database.
 *
 * @category operations
 * @since 0.6.0
 */
export const citusFacts = Operation.single({ name: "migrations.citusFacts", Row: CitusFacts, sql: citusFactsSql })

/**
 * Whether Citus distributes the schema.
 *
 * @category operations
 * @since 0.6.0
 */
export const distributed = Operation.single({
  name: "migrations.distributed",
  Row: Schema.Struct({ distributed: Schema.Boolean }),
  params: (r: InSchema) => [r.schema],
  sql: "SELECT EXISTS (SELECT 1 FROM pg_dist_schema WHERE schemaid = $1::regnamespace) AS distributed"
})

/**
 * The schema's functions planned once per connection (`plan_cache_mode = force_generic_plan`), by signature.
 *
 * @category operations
 * @since 0.6.0
 */
export const genericPlanFunctions = Operation.findAll({
  name: "migrations.genericPlanFunctions",
  Row: Schema.Struct({ fn: Schema.String }),
  params: (r: InSchema) => [r.schema],
  sql: `SELECT p.oid::regprocedure::text AS fn FROM pg_proc p
        WHERE p.pronamespace = $1::regnamespace AND 'plan_cache_mode=force_generic_plan' = ANY (p.proconfig)`
})

/**
 * Plans a function at every call (its signature as {@link genericPlanFunctions} returned it).
 *
 * @category operations
 * @since 0.6.0
 */
export const planAtEveryCall = Operation.void({
  name: "migrations.planAtEveryCall",
  sql: (r: { readonly fn: string }) => `ALTER FUNCTION ${r.fn} SET plan_cache_mode = force_custom_plan`
})

/**
 * The hash a migration was applied with, if it was.
 *
 * @category operations
 * @since 0.6.0
 */
export const appliedHash = Operation.findOne({
  name: "migrations.appliedHash",
  Row: Schema.Struct({ hash: Schema.String }),
  params: (r: InSchema & { readonly idx: number }) => [r.idx],
  sql: (r) => `SELECT ${m.hash} FROM ${bookkeeping(r.schema)} WHERE ${m.idx} = $1`
})

/**
 * Records a migration as applied.
 *
 * @category operations
 * @since 0.6.0
 */
export const recordApplied = Operation.void({
  name: "migrations.recordApplied",
  params: (r: InSchema & { readonly idx: number; readonly tag: string; readonly hash: string }) => [r.idx, r.tag, r.hash],
  sql: (r) => `INSERT INTO ${bookkeeping(r.schema)} (${m.idx}, ${m.tag}, ${m.hash}) VALUES ($1, $2, $3)`
})

/**
 * Every applied migration with the database's {@link CitusFacts}, in one statement (none: no migration applied).
 *
 * @category operations
 * @since 0.6.0
 */
export const appliedWithCitusFacts = Operation.findAll({
  name: "migrations.appliedWithCitusFacts",
  Row: Schema.Struct({ idx: Schema.Number, hash: Schema.String, ...CitusFacts.fields }),
  sql: (r: InSchema) => `SELECT m.${m.idx}, m.${m.hash}, c.citus, c.wanted FROM ${bookkeeping(r.schema)} m CROSS JOIN (${citusFactsSql}) c`
})

/**
 * The indexes of the applied migrations.
 *
 * @category operations
 * @since 0.6.0
 */
export const appliedIndexes = Operation.findAll({
  name: "migrations.appliedIndexes",
  Row: Schema.Struct({ idx: Schema.Number }),
  sql: (r: InSchema) => `SELECT ${m.idx} FROM ${bookkeeping(r.schema)}`
})

/**
 * Whether a schema of that name exists: 1 if so, else 0.
 *
 * @category operations
 * @since 0.6.0
 */
export const schemaExists = Operation.count({
  name: "migrations.schemaExists",
  params: (r: InSchema) => [r.schema],
  sql: "SELECT 1 FROM pg_namespace WHERE nspname = $1"
})

/**
 * On Citus, creates the schemas of this transaction local (schema sharding off); nothing elsewhere.
 *
 * @category operations
 * @since 0.6.0
 */
export const createLocally = Operation.void({
  name: "migrations.createLocally",
  sql: "SELECT set_config('citus.enable_schema_based_sharding', 'off', true) WHERE EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"
})

/**
 * Creates the schema when missing.
 *
 * @category operations
 * @since 0.6.0
 */
export const createSchema = Operation.void({
  name: "migrations.createSchema",
  sql: (r: InSchema) => `CREATE SCHEMA IF NOT EXISTS ${Identifier.quote(r.schema)}`
})

/**
 * Creates the bookkeeping table when missing.
 *
 * @category operations
 * @since 0.6.0
 */
export const createBookkeeping = Operation.void({
  name: "migrations.createBookkeeping",
  sql: (r: InSchema) => `CREATE TABLE IF NOT EXISTS ${bookkeeping(r.schema)} (
        ${m.idx} integer PRIMARY KEY,
        ${m.tag} text NOT NULL,
        ${m.hash} text NOT NULL,
        ${m.appliedAt} timestamptz NOT NULL DEFAULT now()
      )`
})

/**
 * Has Citus distribute the schema.
 *
 * @category operations
 * @since 0.6.0
 */
export const distribute = Operation.void({
  name: "migrations.distribute",
  params: (r: InSchema) => [r.schema],
  sql: "SELECT citus_schema_distribute($1::regnamespace)"
})

/**
 * The advisory lock of a schema's migrations, for the current transaction (`internal/migrationLock.ts`).
 *
 * @category operations
 * @since 0.6.0
 */
export const lock = Operation.void({
  name: "migrations.lock",
  params: (r: InSchema) => [`@whizbang/postgres/PgMigrator:${r.schema}`],
  sql: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"
})
