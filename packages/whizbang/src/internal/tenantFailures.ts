/**
 * Tenants whose services fail to start (a schema newer than this code, a table in the way, the database away): each
 * is named by `status`, logged once per run of failures (then a reminder a minute) and once when it recovers, and
 * tried again every `idleCheck` while it is a tenant (see `fleetSlots.ts`).
 */
import { OutageLog } from "@whizbang/core/internal"
import { type Cause, Effect } from "effect"
import type { FleetContext } from "./fleetContext.js"

/** A failed hold: logged once per run of failures (then a reminder a minute), named by `status`. */
export const failed = (ctx: FleetContext, tenantId: string, cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Effect.suspend(() => {
    const failure = ctx.state.failed(tenantId, OutageLog.causeMessage(cause), Date.now(), () =>
      OutageLog.unsafeMake(`tenant ${tenantId}: starting its services (retried every idleCheck while it is a tenant)`)
    )
    return Effect.andThen(failure.log.failed(cause), ctx.metrics.failing(ctx.state.failingCount))
  })

/** A hold started the tenant's services: its run of failures, if any, is over. */
export const recovered = (ctx: FleetContext, tenantId: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    const failure = ctx.state.recovered(tenantId)
    if (failure === undefined) return Effect.void
    return Effect.andThen(
      failure.log.succeeded,
      Effect.suspend(() => ctx.metrics.failing(ctx.state.failingCount))
    )
  })
