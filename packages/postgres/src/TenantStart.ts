/**
 * What the tenant fleet (`Whizbang.layerTenants`) found in a tenant's schema just before it started the tenant's
 * services, so that the parts of the start with nothing to do skip their first round.
 *
 * A tenant's services start and stop with its bursts of work: a fleet over a thousand tenants starts a tenant's
 * services about once per burst, and every statement of a start is paid per tenant (bench t: the start's
 * statements were two thirds of a tenant's round trips). The fleet runs one statement before every start anyway
 * (`PgOperations.TenantWork.check`); its findings are handed to the start here:
 *
 * - `versionWork: false` — no version building, no hand-over abandoned in `ready`, none due for retirement, no history
 *   planned: the version build loop (`PgPerspectiveVersions`) and the replay of history (`PgHistoryReplay`) run
 *   their first round after their interval instead of at start. The fleet counts version work as work (it holds the
 *   tenant until there is none), so a version registered by the start itself keeps the tenant held until those
 *   rounds ran.
 * - `otherInstances: false` — no row of another instance in the schema's registry: the registration's clean-up of
 *   stale and ended instances (`PgInstanceRegistry`) is left to its heartbeats, as there is nothing to clean up.
 *
 * Unset (`undefined`, the default: a single-tenant service, a tenant's services started by a request): every part
 * runs its first round at start.
 *
 * @since 0.8.0
 */
import { Context } from "effect"

/**
 * The fleet's findings in the tenant's schema, taken just before the start.
 *
 * @category models
 * @since 0.8.0
 */
export interface Facts {
  /** A version is building, an abandoned hand-over waits in `ready`, one is due for retirement, or history is planned. */
  readonly versionWork: boolean
  /** The schema's registry holds a row of another instance (live or not). */
  readonly otherInstances: boolean
}

/**
 * The findings for the services being started; `undefined` when nothing checked (every part runs at start).
 *
 * @category references
 * @since 0.8.0
 */
export const TenantStart = Context.Reference<Facts | undefined>("@whizbang/postgres/TenantStart", {
  defaultValue: () => undefined
})
