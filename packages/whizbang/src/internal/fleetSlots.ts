/**
 * The `maxActive` slots: a notified tenant waits for one (first come first served), then is held in it
 * (`tenantHold.ts`). After a hold the slot goes to the next tenant waiting, and its services stop at once when
 * others wait, else `idleTimeToLive` later. So a tenant costs statements only while it has work, idle tenants cost
 * nothing, and a burst over a thousand tenants starts a bounded number of services.
 *
 * Two processes notified of the same tenant would both start its services, and while others wait for a slot the
 * second start is wasted: the first drains the tenant (bench t, 1,000 tenants over 2 processes: 2,040 starts). So
 * while tenants wait for a slot, a tenant whose work another live instance runs already (its row in the tenant's
 * `wh_service_instances`, written by that process's services at their start, removed at their stop) is put back at
 * the back of the queue, its slot given to one that nobody serves; at its next turn it is held whatever the queue
 * (put back once in a row at most, since the other instance may not run all of its work: a rolling deploy's old
 * instance), and when only such tenants wait, it is held at once (both processes help). So a tenant waits at most one
 * turn of the queue for another process's sake.
 */
import { Cause, Duration, Effect, Exit, Fiber } from "effect"
import { type FleetContext, serves } from "./fleetContext.js"
import { type HoldEnd, stopsAfterHold } from "./fleetState.js"
import * as TenantFailures from "./tenantFailures.js"
import * as TenantHold from "./tenantHold.js"

/** Starts holds while slots are free. */
export const pump = (ctx: FleetContext): Effect.Effect<void> =>
  Effect.suspend(() => {
    const starts = ctx.state.nextHolds(ctx.options.maxActive).map(([tenantId, hold]) =>
      Effect.map(
        Effect.forkIn(
          TenantHold.hold(ctx, tenantId, hold).pipe(
            Effect.onExit((exit) =>
              Exit.isSuccess(exit)
                ? afterHold(ctx, tenantId, exit.value)
                : Cause.hasInterruptsOnly(exit.cause)
                  ? afterHold(ctx, tenantId, "stopped")
                  : Effect.andThen(TenantFailures.failed(ctx, tenantId, exit.cause), afterHold(ctx, tenantId, "failed"))
            ),
            Effect.ignore
          ),
          ctx.scope
        ),
        (fiber) => hold.forkedAs(fiber)
      )
    )
    return Effect.andThen(Effect.all(starts, { discard: true }), ctx.metrics.waiting(ctx.state.waitingCount))
  })

/**
 * After a hold: the slot goes to the next tenant waiting. Its services stay `idleTimeToLive` for the next work or
 * request when nobody waits (or a request came lately), else stop now. A tenant handed on after its time slice
 * waits again at the back; one whose services failed is tried again after `idleCheck` while it is a tenant.
 */
const afterHold = (ctx: FleetContext, tenantId: string, end: HoldEnd): Effect.Effect<void> =>
  Effect.gen(function* () {
    const { options, state } = ctx
    if (end === "elsewhere") {
      state.putBack(tenantId)
      yield* Effect.logDebug("tenant served elsewhere: put back", { tenant: tenantId, waiting: state.waitingCount })
      return yield* pump(ctx)
    }
    state.letGo(tenantId)
    yield* ctx.metrics.released(tenantId)
    const recent = state.requestedWithin(tenantId, Date.now(), Duration.toMillis(options.idleTimeToLive))
    if (stopsAfterHold(end, state.waitingCount > 0, recent)) yield* ctx.stacks.stop(tenantId)
    if (end === "turn") state.requeue(tenantId)
    if (end === "failed") {
      yield* Effect.forkIn(
        Effect.andThen(
          Effect.sleep(options.idleCheck),
          Effect.suspend(() => (state.isTenant(tenantId) ? activate(ctx, tenantId) : Effect.void))
        ),
        ctx.scope
      )
    }
    yield* pump(ctx)
  })

/** A tenant has work (a notification, a retry): a held one is marked, any other waits for a slot. */
export const activate = (ctx: FleetContext, tenantId: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (!serves(ctx.options, tenantId)) return Effect.void
    return ctx.state.notified(tenantId) === "queued" ? pump(ctx) : Effect.void
  })

/** The tenant was removed: it leaves the queue, its hold is interrupted, its services stop. */
export const release = (ctx: FleetContext, tenantId: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    const hold = ctx.state.removed(tenantId)
    return Effect.andThen(hold?.fiber === undefined ? Effect.void : Fiber.interrupt(hold.fiber), ctx.stacks.stop(tenantId))
  })
