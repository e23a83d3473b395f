/**
 * Adding and removing a tenant: its schema created and migrated, then listed as active; or taken out of service,
 * then dropped with its catalog row. Both resumable: an add that died half-way (`provisioning`) is finished by the
 * next add of that id.
 *
 * @internal
 */
import { Effect } from "effect"
import type { Tenant } from "../../PgTenants.js"
import type { MigrationError, PostgresError } from "../../PostgresError.js"
import * as MigrationSql from "../../sql/migrations.js"
import * as Sql from "../../sql/tenants.js"
import { type InvalidTenantId, TenantConflict, TenantRemovalRefused, UnknownTenant } from "../../TenantError.js"
import * as MigrationLock from "../migrationLock.js"
import { type Catalog, toTenant } from "./catalog.js"
import { migrateSchema } from "./migration.js"
import { defaultTenant } from "./tenantId.js"

/** See `PgTenants.add`. */
export const add = (
  catalog: Catalog,
  tenantId: string
): Effect.Effect<Tenant, InvalidTenantId | TenantConflict | PostgresError | MigrationError> =>
  Effect.gen(function* () {
    const { client, catalogSchema, lock, notify, row } = catalog
    const id = yield* catalog.validate(tenantId)
    const schema = catalog.schemaOf(id)
    yield* catalog.ensure
    yield* client.withTransaction(
      Effect.gen(function* () {
        yield* lock(id)
        const found = yield* row(id)
        if (found !== undefined && found.state !== "provisioning") {
          return yield* new TenantConflict({ tenantId: id, schema, reason: "exists" })
        }
        if (found === undefined) {
          const taken = yield* MigrationSql.schemaExists(client, { schema })
          if (taken > 0) return yield* new TenantConflict({ tenantId: id, schema, reason: "schemaTaken" })
          yield* Sql.insertProvisioning(client, { catalogSchema, tenantId: id, schema })
        }
      })
    )
    yield* migrateSchema(client, schema)
    const active = yield* client.withTransaction(Effect.tap(Sql.activate(client, { catalogSchema, tenantId: id }), () => notify(id)))
    yield* Effect.logInfo("tenant added", { tenant: id, schema })
    return toTenant(active)
  })

/** See `PgTenants.remove`. */
export const remove = (
  catalog: Catalog,
  tenantId: string,
  options: { readonly confirm: string }
): Effect.Effect<void, InvalidTenantId | UnknownTenant | TenantRemovalRefused | PostgresError> =>
  Effect.gen(function* () {
    const { client, catalogSchema, lock, notify } = catalog
    const id = yield* catalog.validate(tenantId)
    if (id === defaultTenant) return yield* new TenantRemovalRefused({ tenantId: id, reason: "default" })
    if (options.confirm !== id) return yield* new TenantRemovalRefused({ tenantId: id, reason: "notConfirmed" })
    const found = yield* catalog.row(id)
    if (found === undefined) return yield* new UnknownTenant({ tenantId: id, state: undefined })
    // First out of service everywhere (the fleets let go of it on the notification), then dropped.
    yield* client.withTransaction(Effect.andThen(Sql.markRemoving(client, { catalogSchema, tenantId: id }), notify(id)))
    yield* client
      .withTransaction(
        Effect.gen(function* () {
          yield* lock(id)
          yield* MigrationLock.take(client, found.schemaName)
          yield* Sql.dropSchema(client, { schema: found.schemaName })
          yield* Sql.deleteTenant(client, { catalogSchema, tenantId: id })
          yield* notify(id)
        })
      )
      .pipe(
        // A statement of the tenant's services still in flight (a fleet lets go on the notification, a moment
        // later) can lock the schema's tables in another order than DROP does: the deadlock's victim is tried
        // again, by then the services have let go.
        Effect.retry({
          while: (e) => (e as { readonly _tag?: string })._tag === "PostgresError" && (e as PostgresError).reason._tag === "Deadlock",
          times: 5
        })
      )
    yield* Effect.logInfo("tenant removed", { tenant: id, schema: found.schemaName })
  })
