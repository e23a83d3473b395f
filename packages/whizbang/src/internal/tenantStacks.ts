/**
 * Each tenant's services (its "stack"): those of `Whizbang.layer`, built on a view of the process's one client bound
 * to the tenant's schema, kept in an `RcMap` while something holds them (a request in `Tenants.run`, or the fleet
 * while the tenant has work) and `idleTimeToLive` after.
 */
import { type PgClient, PgHistoryReplay, type PgTenants, TenantStart } from "@whizbang/postgres"
import { Cause, type Context, Deferred, Effect, Layer, RcMap, type Scope } from "effect"
import { CurrentTenant } from "../Tenants.js"
import type * as Whizbang from "../Whizbang.js"
import { serves } from "./fleetContext.js"
import type { FleetState } from "./fleetState.js"
import type { Options } from "./tenantFleetOptions.js"
import type * as TenantMetrics from "./tenantMetrics.js"

export type Stack = Context.Context<Whizbang.WriteServices>

/** A tenant's services: with its worker when this process serves the tenant (`served`), else the write side. */
export type MakeStack = (
  client: PgClient.Shape,
  served: boolean,
  /** To run when the tenant's worker goes idle (`onWorkProcessingIdle`). */
  onIdle: Effect.Effect<void>
) => Layer.Layer<Whizbang.WriteServices, Whizbang.Errors>

export interface TenantStacks {
  /**
   * The tenant's services for the current scope. An RcMap keeps a failed lookup like a value until it expires: a
   * failure is dropped at once, so the next use (a request, the fleet's retry) tries again. `facts`: what the fleet's
   * check found just before, for the start, if this acquire starts the services (`TenantStart`).
   */
  readonly acquire: (tenantId: string, facts?: TenantStart.Facts) => Effect.Effect<Stack, Whizbang.Errors, Scope.Scope>
  /** Stops the tenant's services as soon as nothing uses them, not `idleTimeToLive` later. */
  readonly stop: (tenantId: string) => Effect.Effect<void>
  /** The tenants whose services run (`Tenants.active`). */
  readonly active: Effect.Effect<Array<string>>
}

interface Deps {
  readonly client: PgClient.Shape
  readonly catalog: PgTenants.Shape
  readonly options: Options
  readonly state: FleetState
  readonly metrics: TenantMetrics.Metrics
  readonly stack: MakeStack
  /** The tenant's worker went idle. */
  readonly onIdle: (tenantId: string) => Effect.Effect<void>
}

export const make = (deps: Deps): Effect.Effect<TenantStacks, never, Scope.Scope> =>
  Effect.gen(function* () {
    // The facts of the acquires under way, read by the start they cause (the RcMap's lookup takes the key only).
    const startFacts = new Map<string, TenantStart.Facts>()
    const stacks = yield* RcMap.make({
      lookup: (tenantId: string) => start(deps, tenantId, startFacts.get(tenantId)),
      idleTimeToLive: deps.options.idleTimeToLive
    })
    return {
      acquire: (tenantId, facts) =>
        Effect.suspend(() => {
          if (facts !== undefined) startFacts.set(tenantId, facts)
          return RcMap.get(stacks, tenantId)
        }).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              if (facts !== undefined) startFacts.delete(tenantId)
            })
          ),
          Effect.tapCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.void : RcMap.invalidate(stacks, tenantId)))
        ),
      stop: (tenantId) => RcMap.invalidate(stacks, tenantId),
      active: Effect.map(RcMap.keys(stacks), (keys) => [...keys])
    }
  })

/** Starts the tenant's services in the lookup's scope; they stop when it closes. */
const start = (deps: Deps, tenantId: string, facts: TenantStart.Facts | undefined): Effect.Effect<Stack, Whizbang.Errors, Scope.Scope> =>
  Effect.gen(function* () {
    const { client, catalog, metrics, state } = deps
    // One generation of a tenant's services at a time: a tenant used again while its previous services still stop
    // (deregistering the instance, releasing leases) starts its next ones after they stopped, not beside them.
    const previous = state.previousGeneration(tenantId)
    if (previous !== undefined) yield* Deferred.await(previous)
    const stopped = yield* Deferred.make<void>()
    state.generationStarts(tenantId, stopped)
    // Registered first, so it runs last: after the services' own finalizers.
    yield* Effect.addFinalizer(() =>
      Effect.andThen(
        Effect.sync(() => state.generationStopped(tenantId, stopped)),
        Deferred.succeed(stopped, undefined)
      )
    )
    // Built with the tenant in context: the fibers its services fork (worker, receptors, dispatcher) inherit it,
    // so `Tenants.current` answers there too. Its replay of history gives way to the process's other tenants. What the
    // fleet's check found just before (`facts`, when a hold starts them) spares the start the rounds with nothing to do.
    const context = yield* Layer.build(
      deps.stack(client.forSchema(catalog.schemaOf(tenantId)), serves(deps.options, tenantId), deps.onIdle(tenantId))
    ).pipe(
      Effect.provideService(CurrentTenant, tenantId),
      Effect.provideService(TenantStart.TenantStart, facts),
      Effect.provideService(
        PgHistoryReplay.OtherLiveWork,
        Effect.sync(() => state.othersHaveWork(tenantId))
      )
    )
    yield* Effect.logDebug("tenant services started", { tenant: tenantId })
    yield* metrics.active(state.servicesStarted())
    yield* Effect.addFinalizer(() => Effect.suspend(() => metrics.active(state.servicesStopped())))
    return context
  })
