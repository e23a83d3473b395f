/**
 * The tenant catalog (`<catalog schema>.wh_tenants`) as the rest of `PgTenants` reads it (the default tenant alone
 * until the first add creates it), and the per-tenant lock and notification every change of a tenant takes and sends.
 *
 * @internal
 */
import { Effect, Option } from "effect"
import type { PgClient } from "../../PgClient.js"
import type { Decoded, Tenant } from "../../PgTenants.js"
import type { PostgresError } from "../../PostgresError.js"
import * as Sql from "../../sql/tenants.js"
import { type InvalidTenantId, UnknownTenant } from "../../TenantError.js"
import { defaultTenant, validateOrDefault } from "./tenantId.js"

/** One row of the catalog, as its statements return it. */
export type Row = typeof Sql.Row.Type

/** A catalog row as `PgTenants` shows it. */
export const toTenant = (row: Row): Tenant => ({
  id: row.tenantId,
  schema: row.schemaName,
  state: row.state,
  createdAt: row.createdAt,
  migratedAt: row.migratedAt ?? undefined
})

/** The catalog of one service, and what each operation of `PgTenants` needs of it. */
export interface Catalog {
  readonly client: PgClient["Service"]
  readonly serviceSchema: string
  readonly catalogSchema: string
  readonly prefix: string
  readonly validate: (tenantId: unknown) => Effect.Effect<string, InvalidTenantId>
  readonly schemaOf: (tenantId: string) => string
  /** The tenant's lock for the current transaction (the empty id: the catalog's creation). */
  readonly lock: (tenantId: string) => Effect.Effect<void, PostgresError>
  /** Tells the fleets the tenant changed. */
  readonly notify: (tenantId: string) => Effect.Effect<void, PostgresError>
  /** Creates the catalog, listing the default tenant in it, if it is not there. */
  readonly ensure: Effect.Effect<void, PostgresError>
  /** `query`, or `none` when there is no catalog yet. */
  readonly orNoCatalog: <A>(query: Effect.Effect<A, PostgresError>, none: A) => Effect.Effect<A, PostgresError>
  /** The tenant's row in any state, `undefined` when it is not listed. */
  readonly row: (tenantId: string) => Effect.Effect<Row | undefined, PostgresError>
  readonly list: Effect.Effect<ReadonlyArray<Tenant>, PostgresError>
  readonly get: (tenantId: string) => Effect.Effect<Tenant, InvalidTenantId | UnknownTenant | PostgresError>
}

/** The catalog of the client's service. */
export const make = (client: PgClient["Service"], options: Decoded): Catalog => {
  const serviceSchema = client.schema
  const { prefix, catalogSchema } = options
  const lock = (tenantId: string) => Sql.lock(client, { catalogSchema, tenantId })
  const notify = (tenantId: string) => Sql.notify(client, { catalogSchema, tenantId })

  // Created by the first add, not before: reading the tenants (a CLI's `--tenant`, `tenants list`) writes nothing.
  const ensure = client.withTransaction(
    Effect.gen(function* () {
      yield* lock("")
      // Coordinator-local on Citus: the catalog spans tenants, so it must not become a distributed schema.
      yield* Sql.createLocally(client)
      yield* Sql.createCatalogSchema(client, { catalogSchema })
      yield* Sql.createCatalog(client, { catalogSchema })
      yield* Sql.insertActive(client, { catalogSchema, tenantId: defaultTenant, schema: serviceSchema })
    })
  )

  const validate = (tenantId: unknown) => validateOrDefault(tenantId, prefix)
  const schemaOf = (tenantId: string) => (tenantId === defaultTenant ? serviceSchema : `${prefix}${tenantId}`)
  // Without a catalog yet there is the default tenant alone.
  const defaultRow: Row = {
    tenantId: defaultTenant,
    schemaName: serviceSchema,
    state: "active",
    createdAt: new Date(0),
    migratedAt: null
  }
  const orNoCatalog = <A>(query: Effect.Effect<A, PostgresError>, none: A) =>
    Effect.catchIf(
      query,
      (e) => e.reason._tag === "UndefinedTable" || (e.reason._tag === "Unknown" && e.reason.code === "3F000"),
      () => Effect.succeed(none)
    )
  const row = (tenantId: string) =>
    orNoCatalog(
      Effect.map(Sql.tenant(client, { catalogSchema, tenantId }), Option.getOrUndefined),
      tenantId === defaultTenant ? defaultRow : undefined
    )

  const list = Effect.map(orNoCatalog(Sql.tenants(client, { catalogSchema, defaultTenant }), [defaultRow]), (rows) => rows.map(toTenant))

  const get = (tenantId: string) =>
    Effect.flatMap(validate(tenantId), (id) =>
      Effect.flatMap(row(id), (found) =>
        found?.state === "active" ? Effect.succeed(toTenant(found)) : Effect.fail(new UnknownTenant({ tenantId: id, state: found?.state }))
      )
    )

  return { client, serviceSchema, catalogSchema, prefix, validate, schemaOf, lock, notify, ensure, orNoCatalog, row, list, get }
}
