// The services of many tenants in one process: each tenant's `Whizbang.layer` services (its "stack") built on a
// view of the process's one client bound to the tenant's schema, kept in an `RcMap` while something holds them
// (a request in `Tenants.run`, or the fleet while the tenant has work) and `idleTimeToLive` after.
//
// Finding work without polling each tenant: appends NOTIFY `wh_work` with their schema (the payload), and the fleet
// LISTENs to every schema on the process's one LISTEN connection. A notified tenant waits for one of `maxActive`
// slots (first come first served), then is held until a check — run when its worker says it is idle, else every
// `idleCheck` — finds its queue empty, no version building, and no notification since; or until `timeSlice` has
// passed while others wait (it waits again at the back). Its services stop at once when others wait, else
// `idleTimeToLive` later. So a tenant costs statements only while it has work, idle tenants cost nothing, and a
// burst over a thousand tenants starts a bounded number of services. A tenant another process serves may be put
// back once while others wait; one whose services fail to start is named by `status` and tried again.
//
// Where each part lives:
// - `fleetState.ts`: the fleet's state (tenants, queue, holds, put-back marks, failures, requests, services) and
//   every change to it;
// - `tenantStacks.ts`: starting and stopping a tenant's services;
// - `fleetListener.ts`: the LISTEN streams (work, versions, catalog changes) and the sweep at (re)connect;
// - `fleetSlots.ts`: the `maxActive` slots, what happens after a hold, and putting back a tenant served elsewhere;
// - `tenantHold.ts`: holding a tenant, its idle checks and time slice;
// - `tenantFailures.ts`: tenants whose services fail to start;
// - `tenantDirectory.ts`: the catalog's tenants as the fleet knows them;
// - `tenantMetrics.ts`: the fleet's metrics.
import type { PgClient, PgTenants } from "@whizbang/postgres"
import { Effect, type Scope } from "effect"
import { CurrentTenant, type FleetStatus, type Shape } from "../Tenants.js"
import type * as Whizbang from "../Whizbang.js"
import type { FleetContext, Self } from "./fleetContext.js"
import * as FleetListener from "./fleetListener.js"
import { FleetState } from "./fleetState.js"
import * as TenantDirectory from "./tenantDirectory.js"
import type { Options } from "./tenantFleetOptions.js"
import * as TenantHold from "./tenantHold.js"
import * as TenantMetrics from "./tenantMetrics.js"
import * as TenantStacks from "./tenantStacks.js"

/** `Tenants` over `catalog`, each tenant's stack made by `stack` on its schema's view of `client`. */
export const make = (
  client: PgClient.Shape,
  catalog: PgTenants.Shape,
  /** A tenant's services: with its worker when this process serves the tenant (`served`), else the write side. */
  stack: TenantStacks.MakeStack,
  options: Options,
  /** This process's instance, when another's is taken as gone, whether it keeps queue statistics (`FleetContext.self`). */
  self: Self
): Effect.Effect<Shape, Whizbang.Errors, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const state = new FleetState()
    const metrics = TenantMetrics.make(options.metricsPerTenant)
    yield* TenantDirectory.refresh(catalog, state)
    const stacks = yield* TenantStacks.make({
      client,
      catalog,
      options,
      state,
      metrics,
      stack,
      onIdle: (tenantId) => TenantHold.workerIdle(state, tenantId)
    })
    const ctx: FleetContext = { client, catalog, options, self, state, stacks, metrics, scope }
    yield* FleetListener.listen(ctx)

    const run: Shape["run"] = (tenantId, effect) =>
      Effect.flatMap(TenantDirectory.resolve(catalog, state, tenantId), (id) =>
        Effect.scoped(
          Effect.andThen(
            Effect.sync(() => state.requested(id, Date.now())),
            Effect.flatMap(stacks.acquire(id), (context) =>
              effect.pipe(Effect.provideContext(context), Effect.provideService(CurrentTenant, id))
            )
          )
        )
      )
    const add: Shape["add"] = (tenantId) =>
      Effect.flatMap(catalog.add(tenantId), (tenant) => Effect.as(run(tenant.id, Effect.void), tenant))
    const status: Effect.Effect<FleetStatus> = Effect.sync(() => state.status())

    return { run, add, catalog, active: stacks.active, status }
  })
