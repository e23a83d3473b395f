/**
 * Holding a tenant: a tenant given a slot is held until a check — run when its worker says it is idle, else every
 * `idleCheck` — finds its queue empty, no version building, and no notification since; or until `timeSlice` has
 * passed while others wait (it waits again at the back). The worker of a held tenant runs exactly as a
 * single-tenant worker (leases, fencing, rewinds, versions, dead letters), its statements on the process's one
 * worker pool.
 */
import type { PostgresError } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Deferred, Duration, Effect } from "effect"
import type * as Whizbang from "../Whizbang.js"
import type { FleetContext } from "./fleetContext.js"
import type { FleetState, Hold } from "./fleetState.js"
import * as TenantFailures from "./tenantFailures.js"

/** A check of the tenant's work (before its services start, then at each wake): one statement on its schema's view. */
const checkWork = (ctx: FleetContext, tenantId: string) =>
  PgOperations.TenantWork.check(ctx.client.forSchema(ctx.catalog.schemaOf(tenantId)), ctx.self)

/**
 * Analyzes the tenant's queue tables the check found with stale statistics, before its worker claims over them.
 * Autovacuum visits a database's tables in turn and, with a schema per tenant, comes minutes late: a backlog's
 * claim planned on statistics of an empty queue ran for seconds (1.8 s alone over 200,000 work rows, 3-4.5 s under
 * load in bench t, every other tenant's statements slowed meanwhile; 13 ms after an ANALYZE). A failure (a role
 * that does not own the tables, an outage) is logged: the worker's own upkeep tries again after its claims. Not with
 * `queueVacuum: false` (statistics left to autovacuum).
 */
const analyzeStale = (ctx: FleetContext, tenantId: string, work: { readonly staleTables: ReadonlyArray<string> }) => {
  const tables = work.staleTables.filter((table) => PgOperations.QueueVacuum.queueTables.has(table))
  if (tables.length === 0 || !ctx.self.analyzeQueues) return Effect.void
  return PgOperations.QueueVacuum.analyze(ctx.client.forSchema(ctx.catalog.schemaOf(tenantId)), { tables }).pipe(
    Effect.timed,
    Effect.flatMap(([took]) =>
      Effect.logDebug("tenant's queue tables analyzed", { tenant: tenantId, tables, ms: Duration.toMillis(took) })
    ),
    Effect.catch((error) =>
      Effect.logWarning("analyze of a tenant's queue tables failed", { tenant: tenantId, tables, error: error.message })
    )
  )
}

/** A tenant's worker went idle: its hold checks now. */
export const workerIdle = (state: FleetState, tenantId: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    const hold = state.held(tenantId)
    return hold === undefined ? Effect.void : Effect.asVoid(Deferred.succeed(hold.idleSignal, undefined))
  })

/**
 * Holds the tenant's services while it has work: checked when its worker goes idle (or every `idleCheck`), let go
 * when a check finds nothing and no notification came meanwhile; handed on after `timeSlice` when other tenants
 * wait for a slot. A tenant queued while another process drained it is let go after one check, its services never
 * started.
 */
export const hold = (
  ctx: FleetContext,
  tenantId: string,
  held: Hold
): Effect.Effect<"idle" | "turn" | "elsewhere", Whizbang.Errors | PostgresError.PostgresError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { state } = ctx
      let work: typeof PgOperations.TenantWork.Work.Type
      if (state.checksFirst(held)) {
        const notified = held.takeNotified()
        work = yield* checkWork(ctx, tenantId)
        const verdict = state.firstChecked(tenantId, held, work, notified)
        if (verdict !== "start") return verdict
      } else {
        // Notified, nobody waiting behind it: the check only looks at the queue's statistics and what a start needs.
        work = yield* checkWork(ctx, tenantId)
      }
      yield* analyzeStale(ctx, tenantId, work)
      state.starts(tenantId, held)
      // What the check found goes to the services' start, if this acquire starts them (`TenantStart`).
      yield* ctx.stacks.acquire(tenantId, { versionWork: work.versionWork, otherInstances: work.others })
      yield* TenantFailures.recovered(ctx, tenantId)
      return yield* whileBusy(ctx, tenantId, held)
    })
  )

/**
 * How soon a held tenant is checked again when it was busy while its worker was idle (a replay of history, a version
 * build: their end sends no idle signal), rather than after `idleCheck`.
 */
const quietRecheck = Duration.millis(500)

/**
 * The started services held: until an idle check finds nothing, or the time slice is over. A tenant busy while its
 * worker is idle is checked every {@link quietRecheck}: its slot is not kept an `idleCheck` after its replay ended.
 */
const whileBusy = (ctx: FleetContext, tenantId: string, held: Hold): Effect.Effect<"idle" | "turn", PostgresError.PostgresError> =>
  Effect.gen(function* () {
    const { options, state } = ctx
    const since = Date.now()
    // Busy while its worker said it is idle: history replayed or a version built, which no idle signal ends.
    let quietlyBusy = false
    while (true) {
      const saidIdle: boolean = yield* Effect.raceFirst(
        Effect.as(Deferred.await(held.idleSignal), true),
        Effect.as(Effect.sleep(quietlyBusy ? Duration.min(options.idleCheck, quietRecheck) : options.idleCheck), false)
      )
      const turnOver = state.turnOver(since, Date.now(), Duration.toMillis(options.timeSlice))
      if (held.woke(saidIdle, turnOver) === "wait") continue
      const work = yield* checkWork(ctx, tenantId)
      yield* ctx.metrics.lag(tenantId, work.lagSeconds)
      if (work.busy) yield* analyzeStale(ctx, tenantId, work)
      const verdict = held.checked(work.busy, turnOver)
      quietlyBusy = work.busy && (saidIdle || quietlyBusy)
      if (verdict === "idle") {
        yield* Effect.logDebug("tenant idle", { tenant: tenantId, heldMs: Date.now() - since, workerSaidIdle: saidIdle })
        return "idle" as const
      }
      if (verdict === "turn") return "turn" as const
    }
  })
