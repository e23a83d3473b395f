/**
 * Many tenants on one service: a tenant is a Postgres schema, and one process serves all of them.
 * `Whizbang.layerTenants(config)` provides `Tenants`; work for a tenant runs inside `Tenants.run(tenantId, effect)`,
 * where `effect` sees that tenant's event store, lenses, awaiters, receptors and dispatcher — the services of
 * `Whizbang.layer`, bound to the tenant's schema — and `CurrentTenant` says which tenant it is.
 *
 * ```ts
 * const placeOrder = (tenantId: string, order: Order) =>
 *   Tenants.run(tenantId, Effect.gen(function* () {
 *     const store = yield* EventStore.EventStore
 *     yield* store.append(AppendRequest.make(order.id, [OrderPlaced.make(order)]))
 *   }))
 * ```
 *
 * **No tenant, no service**: with tenancy on, `Whizbang.layerTenants` provides no event store of its own, so code
 * that needs one outside `Tenants.run` does not compile; code that reads the tenant (`Tenants.current`,
 * `Tenants.provideCurrent`) fails with `TenantRequired` when none is set. Nothing ever falls back to the default
 * tenant (the service schema, id `default`), which is served like any other.
 *
 * **Isolation**: every statement of a tenant's services runs on a connection put on the tenant's schema, and one
 * transaction serves one tenant (a statement of another tenant inside it is a defect), so tenant A's events are
 * never visible, applied, awaited or dead-lettered in tenant B.
 *
 * **Workers**: one fleet per process serves every tenant (or `tenants.serve`): the tenants with work are found by
 * their notifications (`wh_work` names the schema), never by polling each tenant; a tenant's services start when
 * it has work or a request and stop `idleTimeToLive` after neither, so idle tenants cost nothing. At most
 * `tenants.maxActive` tenants are held for their work at once; the others wait their turn, and a tenant with work
 * hands its slot on after `tenants.timeSlice` when others wait, so a tenant with a large backlog or a rebuild does
 * not starve the others. All tenants share the process's pools (`maxConnections` for requests, one worker pool, one
 * LISTEN connection). `status` names what waits: tenants queued for a slot, and tenants whose services fail to
 * start (retried while they have work; logged once, then a reminder a minute).
 *
 * @since 0.6.0
 */
import { TenantError } from "@whizbang/postgres"
import type { PgTenants } from "@whizbang/postgres"
import { Context, Effect } from "effect"
import type * as Whizbang from "./Whizbang.js"

/**
 * The tenant the current fiber works for (`undefined`: none). `Tenants.run` sets it; forked fibers inherit it.
 *
 * @category references
 * @since 0.6.0
 */
export const CurrentTenant = Context.Reference<string | undefined>("whizbang/Tenants/CurrentTenant", {
  defaultValue: () => undefined
})

/**
 * What a tenant's work may fail with besides its own errors: an id refused or unknown, or the tenant's services
 * failing to start (its schema not migrated, the database down).
 *
 * @category models
 * @since 0.6.0
 */
export type RunError = TenantError.InvalidTenantId | TenantError.UnknownTenant | Whizbang.Errors

/**
 * What {@link Shape.add} may fail with: the catalog's refusals, or the tenant's services failing to start.
 *
 * @category models
 * @since 0.6.0
 */
export type AddError = Effect.Error<ReturnType<PgTenants.Shape["add"]>> | RunError

/**
 * @category models
 * @since 0.6.0
 */
export interface Shape {
  /** Runs `effect` for `tenantId`, with that tenant's services (those of `Whizbang.layer`) and `CurrentTenant`. */
  readonly run: <A, E, R>(
    tenantId: string,
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | RunError, Exclude<R, Whizbang.WriteServices>>
  /**
   * Adds the tenant (`catalog.add`: its schema created and migrated) and starts its services once, so that this
   * service's perspective versions are registered and their tables laid out now: the tenant's first request or work
   * then runs no DDL. A tenant there already is refused as `catalog.add` refuses it (`TenantConflict`); one added by
   * `catalog.add` or the CLI is laid out by its first request or work instead. When its services fail to start (the
   * database away, a table in the way), the tenant stays added and the error says why; its first request or work
   * lays it out then.
   */
  readonly add: (tenantId: string) => Effect.Effect<PgTenants.Tenant, AddError>
  /** The catalog: list, add, remove and migrate tenants (`catalog.add` creates the schema only: see `add`). */
  readonly catalog: PgTenants.Shape
  /** The tenants whose services run in this process now (with work, or a request in the last `idleTimeToLive`). */
  readonly active: Effect.Effect<ReadonlyArray<string>>
  /** What the fleet of this process holds, queues, and fails to start. */
  readonly status: Effect.Effect<FleetStatus>
}

/**
 * The fleet of one process: tenants held for their work (each takes a slot of `tenants.maxActive`), tenants waiting
 * for a slot (first come first served), and tenants whose services fail to start — their work waits until the cause
 * is fixed (a schema newer than this code, a table in the way, the database away); each is retried every
 * `idleCheck` while it is a tenant.
 *
 * @category models
 * @since 0.6.0
 */
export interface FleetStatus {
  readonly held: ReadonlyArray<string>
  readonly waiting: ReadonlyArray<string>
  readonly failing: ReadonlyArray<{
    readonly tenantId: string
    /** The last failure's message. */
    readonly error: string
    readonly since: Date
    readonly attempts: number
  }>
}

/**
 * @category services
 * @since 0.6.0
 */
export class Tenants extends Context.Service<Tenants, Shape>()("whizbang/Tenants") {}

/**
 * `run` of the `Tenants` in context.
 *
 * @category accessors
 * @since 0.6.0
 */
export const run = <A, E, R>(
  tenantId: string,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | RunError, Exclude<R, Whizbang.WriteServices> | Tenants> =>
  Effect.flatMap(Effect.service(Tenants), (tenants) => tenants.run(tenantId, effect))

/**
 * `add` of the `Tenants` in context: the tenant added, and this service's perspectives laid out in it.
 *
 * @category accessors
 * @since 0.6.0
 */
export const add = (tenantId: string): Effect.Effect<PgTenants.Tenant, AddError, Tenants> =>
  Effect.flatMap(Effect.service(Tenants), (tenants) => tenants.add(tenantId))

/**
 * The current fiber's tenant, or `TenantRequired` naming `operation`.
 *
 * @category accessors
 * @since 0.6.0
 */
export const current = (operation = "this operation"): Effect.Effect<string, TenantError.TenantRequired> =>
  Effect.flatMap(Effect.service(CurrentTenant), (tenantId) =>
    tenantId === undefined ? Effect.fail(new TenantError.TenantRequired({ operation })) : Effect.succeed(tenantId)
  )

/**
 * Runs `effect` for the tenant already in `CurrentTenant` (set by middleware, say): `TenantRequired` when none is.
 *
 * @category accessors
 * @since 0.6.0
 */
export const provideCurrent = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  operation?: string
): Effect.Effect<A, E | RunError | TenantError.TenantRequired, Exclude<R, Whizbang.WriteServices> | Tenants> =>
  Effect.flatMap(current(operation), (tenantId) => run(tenantId, effect))
