/**
 * The tenants the fleet knows: the catalog's active tenants (id and schema), read at start and again when the
 * catalog changes or a notification names a schema not known here; a request for a tenant not known yet asks the
 * catalog.
 */
import type { PgTenants, PostgresError, TenantError } from "@whizbang/postgres"
import { Effect } from "effect"
import type { FleetState } from "./fleetState.js"

/** Reads the catalog's tenants again. */
export const refresh = (catalog: PgTenants.Shape, state: FleetState): Effect.Effect<void, PostgresError.PostgresError> =>
  Effect.map(catalog.list, (tenants) => state.refreshed(tenants))

/** The valid id of an active tenant. */
export const resolve = (
  catalog: PgTenants.Shape,
  state: FleetState,
  tenantId: string
): Effect.Effect<string, TenantError.InvalidTenantId | TenantError.UnknownTenant | PostgresError.PostgresError> =>
  Effect.gen(function* () {
    const id = yield* catalog.validate(tenantId)
    if (state.isTenant(id)) return id
    // Added in another process, its notification not here yet: the catalog decides.
    state.learned(yield* catalog.get(id))
    return id
  })
