/**
 * Finding work without polling each tenant: appends NOTIFY `wh_work` with their schema (the payload), and the fleet
 * LISTENs to every schema on the process's one LISTEN connection; a notified tenant waits for a slot
 * (`fleetSlots.ts`). Notifications sent while the LISTEN connection was down are lost: on every (re)connect every
 * tenant served is queued, each checked (one statement) when its turn comes, in an order of the process's own.
 * Catalog changes (tenants added or removed, here or in another process) come on their own stream.
 */
import { Effect, type Scope, Stream } from "effect"
import { type FleetContext, serves } from "./fleetContext.js"
import * as FleetSlots from "./fleetSlots.js"
import * as TenantDirectory from "./tenantDirectory.js"

/** A random order (Fisher-Yates). */
const shuffled = <A>(items: ReadonlyArray<A>): Array<A> => {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

/**
 * At (re)connect, notifications sent meanwhile are lost: every tenant served is queued, each checked when its turn
 * comes (one statement), in an order of this process's own so that processes sweeping together start on different
 * tenants.
 */
const sweep = (ctx: FleetContext): Effect.Effect<void> =>
  Effect.gen(function* () {
    const { state } = ctx
    const ids = state.tenants().filter((id) => serves(ctx.options, id))
    state.swept(shuffled(ids))
    yield* FleetSlots.pump(ctx)
    yield* Effect.logDebug("tenant sweep", { tenants: ids.length, held: state.heldCount, waiting: state.waitingCount })
  })

/** A `wh_work` notification: the schema of a tenant with work (`undefined`: (re)connected). */
const onWork = (ctx: FleetContext, payload: string | undefined): Effect.Effect<void> => {
  if (payload === undefined) return sweep(ctx)
  const newline = payload.indexOf("\n")
  const schema = newline < 0 ? payload : payload.slice(0, newline)
  const id = ctx.state.tenantOf(schema)
  if (id !== undefined) return FleetSlots.activate(ctx, id)
  // A tenant added in another process (its catalog notification may come later), or another service's schema.
  if (!schema.startsWith(ctx.catalog.prefix)) return Effect.void
  return Effect.flatMap(Effect.ignore(TenantDirectory.refresh(ctx.catalog, ctx.state)), () => {
    const added = ctx.state.tenantOf(schema)
    return added === undefined ? Effect.void : FleetSlots.activate(ctx, added)
  })
}

/** A catalog change: the tenant added or removed (`undefined`: something may have changed). */
const onCatalog = (ctx: FleetContext, tenantId: string | undefined): Effect.Effect<void> =>
  Effect.flatMap(Effect.ignore(TenantDirectory.refresh(ctx.catalog, ctx.state)), () =>
    tenantId !== undefined && !ctx.state.isTenant(tenantId) ? FleetSlots.release(ctx, tenantId) : Effect.void
  )

/** Listens for the fleet, in the scope: catalog changes, work, and versions. */
export const listen = (ctx: FleetContext): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function* () {
    yield* Effect.forkScoped(Stream.runForEach(ctx.catalog.changes, (tenantId) => onCatalog(ctx, tenantId)))
    yield* Effect.forkScoped(Stream.runForEach(ctx.client.listenAll("wh_work"), (payload) => onWork(ctx, payload)))
    // A version registered (or changed) in a tenant that has no work, e.g. by a process that only writes: its build
    // needs the tenant's services too. Versions changes come on `wh_processed` as `<schema>\n@versions...` lines.
    yield* Effect.forkScoped(
      Stream.runForEach(ctx.client.listenAll("wh_processed"), (payload) => {
        if (payload === undefined) return Effect.void
        const newline = payload.indexOf("\n")
        if (newline < 0 || !payload.startsWith("@versions", newline + 1)) return Effect.void
        return onWork(ctx, payload.slice(0, newline))
      })
    )
  })
