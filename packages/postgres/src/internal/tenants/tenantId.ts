// Tenant ids become schema names (`prefix` + id), so they are checked before anything is written: 1 to 40
// characters of a-z, 0-9 and _, starting with a letter; not `pg_*` (Postgres's); not starting with the prefix
// (an id that names a tenant's schema rather than a tenant). Quotes, `;`, spaces, upper case and unicode fail the
// pattern, so an id never needs quoting to be safe (it is quoted anyway where it meets SQL text).
import { Effect } from "effect"
import { InvalidTenantId } from "../../TenantError.js"

const pattern = /^[a-z][a-z0-9_]{0,39}$/

/** The id, or why it cannot be one. */
export const validate = (tenantId: unknown, prefix: string): Effect.Effect<string, InvalidTenantId> => {
  const refuse = (reason: string) => Effect.fail(new InvalidTenantId({ tenantId, reason }))
  if (typeof tenantId !== "string") return refuse("must be a string")
  if (tenantId.length === 0) return refuse("must not be empty")
  if (tenantId.length > 40) return refuse(`must be at most 40 characters (got ${tenantId.length})`)
  if (!pattern.test(tenantId)) return refuse("must be a-z, 0-9 and _ only, starting with a letter")
  if (tenantId.startsWith("pg_")) return refuse('must not start with "pg_" (reserved by Postgres)')
  if (tenantId.startsWith(prefix)) return refuse(`must not start with the tenant schema prefix "${prefix}"`)
  return Effect.succeed(tenantId)
}

/** The id of the tenant whose schema is the service's own (`PgTenants.defaultTenant`). */
export const defaultTenant = "default"

/** {@link validate}, the default tenant's id valid too (`PgTenants.validateId`). */
export const validateOrDefault = (tenantId: unknown, prefix: string): Effect.Effect<string, InvalidTenantId> =>
  tenantId === defaultTenant ? Effect.succeed(defaultTenant) : validate(tenantId, prefix)
