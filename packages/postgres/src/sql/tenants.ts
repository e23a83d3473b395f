/**
 * The tenant catalog's statements (`PgTenants`): `<catalog schema>.wh_tenants`, created by the first tenant added,
 * and the per-tenant lock and notification. The catalog schema is a request's, quoted here; every value is a bound
 * parameter.
 */
import { Schema } from "effect"
import { TenantsCatalog as t } from "../internal/columns.js"
import * as Identifier from "../internal/identifier.js"
import * as Operation from "../internal/operation.js"

/** The catalog's schema, unquoted. */
interface InCatalog {
  readonly catalogSchema: string
}

/** A tenant of the catalog. */
interface OfTenant extends InCatalog {
  readonly tenantId: string
}

const catalog = (catalogSchema: string) => `${Identifier.quote(catalogSchema)}.${t.table}`

/**
 * One row of the catalog.
 *
 * @category models
 * @since 0.6.0
 */
export const Row = Schema.Struct({
  tenantId: Schema.String,
  schemaName: Schema.String,
  state: Schema.Literals(["active", "provisioning", "removing"]),
  createdAt: Schema.Date,
  migratedAt: Schema.NullOr(Schema.Date)
})

const rowColumns = {
  tenantId: t.tenantId,
  schemaName: t.schemaName,
  state: t.state,
  createdAt: t.createdAt,
  migratedAt: t.migratedAt
} as const

/**
 * The lock of one tenant (the empty id: the catalog's creation) for the current transaction.
 *
 * @category operations
 * @since 0.6.0
 */
export const lock = Operation.void({
  name: "tenants.lock",
  params: (r: OfTenant) => [`@whizbang/postgres/PgTenants:${r.catalogSchema}:${r.tenantId}`],
  sql: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"
})

/**
 * Tells the fleets a tenant changed (`wh_tenants`: the catalog schema, a newline, the tenant id).
 *
 * @category operations
 * @since 0.6.0
 */
export const notify = Operation.void({
  name: "tenants.notify",
  params: (r: OfTenant) => [`${r.catalogSchema}\n${r.tenantId}`],
  sql: "SELECT pg_notify('wh_tenants', $1)"
})

/**
 * Creates the schemas of this transaction local on Citus (schema sharding off).
 *
 * @category operations
 * @since 0.6.0
 */
export const createLocally = Operation.void({
  name: "tenants.createLocally",
  sql: "SELECT set_config('citus.enable_schema_based_sharding', 'off', true)"
})

/**
 * Creates the catalog's schema when missing.
 *
 * @category operations
 * @since 0.6.0
 */
export const createCatalogSchema = Operation.void({
  name: "tenants.createCatalogSchema",
  sql: (r: InCatalog) => `CREATE SCHEMA IF NOT EXISTS ${Identifier.quote(r.catalogSchema)}`
})

/**
 * Creates the catalog when missing.
 *
 * @category operations
 * @since 0.6.0
 */
export const createCatalog = Operation.void({
  name: "tenants.createCatalog",
  sql: (r: InCatalog) => `CREATE TABLE IF NOT EXISTS ${catalog(r.catalogSchema)} (
          ${t.tenantId} text PRIMARY KEY,
          ${t.schemaName} text NOT NULL UNIQUE,
          ${t.state} text NOT NULL CHECK (${t.state} IN ('provisioning', 'active', 'removing')),
          ${t.createdAt} timestamptz NOT NULL DEFAULT now(),
          ${t.migratedAt} timestamptz
        )`
})

/**
 * Lists a tenant active in its schema (the default tenant in the service's schema), unless it is listed.
 *
 * @category operations
 * @since 0.6.0
 */
export const insertActive = Operation.void({
  name: "tenants.insertActive",
  params: (r: OfTenant & { readonly schema: string }) => [r.tenantId, r.schema],
  sql: (r) =>
    `INSERT INTO ${catalog(r.catalogSchema)} (${t.tenantId}, ${t.schemaName}, ${t.state}, ${t.migratedAt}) VALUES ($1, $2, 'active', now()) ON CONFLICT DO NOTHING`
})

/**
 * A tenant's row, if listed.
 *
 * @category operations
 * @since 0.6.0
 */
export const tenant = Operation.findOne({
  name: "tenants.tenant",
  Row,
  columns: rowColumns,
  params: (r: OfTenant) => [r.tenantId],
  sql: (r) => `SELECT * FROM ${catalog(r.catalogSchema)} WHERE ${t.tenantId} = $1`
})

/**
 * Every row, the default tenant first.
 *
 * @category operations
 * @since 0.6.0
 */
export const tenants = Operation.findAll({
  name: "tenants.tenants",
  Row,
  columns: rowColumns,
  params: (r: InCatalog & { readonly defaultTenant: string }) => [r.defaultTenant],
  sql: (r) => `SELECT * FROM ${catalog(r.catalogSchema)} ORDER BY ${t.tenantId} <> $1, ${t.tenantId}`
})

/**
 * Lists a tenant being provisioned in its schema.
 *
 * @category operations
 * @since 0.6.0
 */
export const insertProvisioning = Operation.void({
  name: "tenants.insertProvisioning",
  params: (r: OfTenant & { readonly schema: string }) => [r.tenantId, r.schema],
  sql: (r) => `INSERT INTO ${catalog(r.catalogSchema)} (${t.tenantId}, ${t.schemaName}, ${t.state}) VALUES ($1, $2, 'provisioning')`
})

/**
 * A provisioned tenant becomes active; returns its row.
 *
 * @category operations
 * @since 0.6.0
 */
export const activate = Operation.single({
  name: "tenants.activate",
  Row,
  columns: rowColumns,
  params: (r: OfTenant) => [r.tenantId],
  sql: (r) => `UPDATE ${catalog(r.catalogSchema)} SET ${t.state} = 'active', ${t.migratedAt} = now() WHERE ${t.tenantId} = $1 RETURNING *`
})

/**
 * A tenant goes out of service before its schema is dropped.
 *
 * @category operations
 * @since 0.6.0
 */
export const markRemoving = Operation.void({
  name: "tenants.markRemoving",
  params: (r: OfTenant) => [r.tenantId],
  sql: (r) => `UPDATE ${catalog(r.catalogSchema)} SET ${t.state} = 'removing' WHERE ${t.tenantId} = $1`
})

/**
 * Drops a tenant's schema, with every table in it.
 *
 * @category operations
 * @since 0.6.0
 */
export const dropSchema = Operation.void({
  name: "tenants.dropSchema",
  sql: (r: { readonly schema: string }) => `DROP SCHEMA IF EXISTS ${Identifier.quote(r.schema)} CASCADE`
})

/**
 * Removes a tenant's row.
 *
 * @category operations
 * @since 0.6.0
 */
export const deleteTenant = Operation.void({
  name: "tenants.deleteTenant",
  params: (r: OfTenant) => [r.tenantId],
  sql: (r) => `DELETE FROM ${catalog(r.catalogSchema)} WHERE ${t.tenantId} = $1`
})

/**
 * Records that a tenant's schema was migrated now.
 *
 * @category operations
 * @since 0.6.0
 */
export const markMigrated = Operation.void({
  name: "tenants.markMigrated",
  params: (r: OfTenant) => [r.tenantId],
  sql: (r) => `UPDATE ${catalog(r.catalogSchema)} SET ${t.migratedAt} = now() WHERE ${t.tenantId} = $1`
})
