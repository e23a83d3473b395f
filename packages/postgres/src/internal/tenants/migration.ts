/**
 * Migrations of tenants' schemas: one schema (an add's), or every tenant's (`PgTenants.migrate`), `concurrency` at a
 * time, a failure reported with its tenant and the others migrated all the same.
 *
 * @internal
 */
import { Effect } from "effect"
import { PgClient } from "../../PgClient.js"
import * as PgMigrator from "../../PgMigrator.js"
import type { MigrateReport, Progress } from "../../PgTenants.js"
import type { PostgresError } from "../../PostgresError.js"
import * as Sql from "../../sql/tenants.js"
import type { Catalog } from "./catalog.js"

/** Brings `schema` to the shipped migrations. */
export const migrateSchema = (client: PgClient["Service"], schema: string) =>
  Effect.provideService(PgMigrator.run, PgClient, client.forSchema(schema))

/** See `PgTenants.migrate`. */
export const migrateAll = (
  catalog: Catalog,
  migrateOptions?: { readonly concurrency?: number; readonly onProgress?: Progress }
): Effect.Effect<MigrateReport, PostgresError> =>
  Effect.gen(function* () {
    const { client, catalogSchema } = catalog
    const tenants = (yield* catalog.list).filter((t) => t.state !== "removing")
    const migrated: Array<string> = []
    const failed: Array<MigrateReport["failed"][number]> = []
    let done = 0
    yield* Effect.forEach(
      tenants,
      (tenant) =>
        migrateSchema(client, tenant.schema).pipe(
          Effect.tap((report) =>
            report.applied.length > 0
              ? Effect.andThen(
                  Effect.sync(() => migrated.push(tenant.id)),
                  catalog.orNoCatalog(Sql.markMigrated(client, { catalogSchema, tenantId: tenant.id }), undefined)
                )
              : Effect.void
          ),
          Effect.catch((error) => Effect.sync(() => void failed.push({ tenantId: tenant.id, error }))),
          Effect.andThen(
            Effect.suspend(() => {
              done += 1
              return migrateOptions?.onProgress?.(done, tenants.length, tenant.id) ?? Effect.void
            })
          )
        ),
      { concurrency: Math.max(1, migrateOptions?.concurrency ?? 4), discard: true }
    )
    return { tenants: tenants.length, migrated, failed }
  })
