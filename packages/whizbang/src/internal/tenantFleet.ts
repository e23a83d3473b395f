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
// burst over a thousand tenants starts a bounded number of services. Notifications sent while the LISTEN connection
// was down are lost: on every (re)connect every tenant served is queued, each checked (one statement) when its turn
// comes, in an order of the process's own. The worker of a held tenant runs exactly as a single-tenant worker
// (leases, fencing, rewinds, versions, dead letters), its statements on the process's one worker pool. A tenant
// whose services fail to start is named by `status`, logged once per run of failures, and tried again every
// `idleCheck` while it is a tenant.
//
// Two processes notified of the same tenant would both start its services, and while others wait for a slot the
// second start is wasted: the first drains the tenant (bench t, 1,000 tenants over 2 processes: 2,040 starts). So
// while tenants wait for a slot, a tenant whose work another live instance runs already (its row in the tenant's
// `wh_service_instances`, written by that process's services at their start, removed at their stop) is put back at
// the back of the queue, its slot given to one that nobody serves; at its next turn it is held whatever the queue
// (put back once in a row at most, since the other instance may not run all of its work: a rolling deploy's old
// instance), and when only such tenants wait, it is held at once (both processes help). So a tenant waits at most one
// turn of the queue for another process's sake.
import { OutageLog } from "@whizbang/core/internal"
import type { PgClient, PgTenants, PostgresError } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Cause, type Context, Deferred, Duration, Effect, Exit, Fiber, Layer, RcMap, type Scope, Stream } from "effect"
import { CurrentTenant, type FleetStatus, type Shape } from "../Tenants.js"
import type * as Whizbang from "../Whizbang.js"
import type { Options } from "./tenantFleetOptions.js"
import * as TenantMetrics from "./tenantMetrics.js"

type Stack = Context.Context<Whizbang.WriteServices>

interface Hold {
  /** A notification came since the last idle check. */
  dirty: boolean
  fiber: Fiber.Fiber<void> | undefined
  /** Completed when the tenant's worker goes idle (its `onWorkProcessingIdle`): check now, not at `idleCheck`. */
  idle: Deferred.Deferred<void>
}

/** A random order (Fisher-Yates). */
const shuffled = <A>(items: ReadonlyArray<A>): Array<A> => {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

/** `Tenants` over `catalog`, each tenant's stack made by `stack` on its schema's view of `client`. */
export const make = (
  client: PgClient.Shape,
  catalog: PgTenants.Shape,
  /** A tenant's services: with its worker when this process serves the tenant (`served`), else the write side. */
  stack: (
    client: PgClient.Shape,
    served: boolean,
    /** To run when the tenant's worker goes idle (`onWorkProcessingIdle`). */
    onIdle: Effect.Effect<void>
  ) => Layer.Layer<Whizbang.WriteServices, Whizbang.Errors>,
  options: Options,
  /** This process's instance (every tenant's services register it) and when another's is taken as gone. */
  self: { readonly instanceId: string; readonly staleSeconds: number }
): Effect.Effect<Shape, Whizbang.Errors, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const serves = (tenantId: string) => options.serve === undefined || options.serve.has(tenantId)
    /** Active tenants: id -> schema, from the catalog, refreshed when it changes. */
    const known = new Map<string, string>()
    const bySchema = new Map<string, string>()
    const refresh = Effect.map(catalog.list, (tenants) => {
      known.clear()
      bySchema.clear()
      for (const t of tenants) {
        if (t.state !== "active") continue
        known.set(t.id, t.schema)
        bySchema.set(t.schema, t.id)
      }
    })
    yield* refresh

    // One generation of a tenant's services at a time: a tenant used again while its previous services still stop
    // (deregistering the instance, releasing leases) starts its next ones after they stopped, not beside them.
    const stopping = new Map<string, Deferred.Deferred<void>>()
    /** Tenants the fleet holds (each takes one of `maxActive` slots). */
    const holds = new Map<string, Hold>()
    /** Tenants waiting for a slot, first come first served (`queued`: the same, for lookups). */
    const waiting: Array<string> = []
    const queued = new Set<string>()
    /** When each tenant last had a request (`Tenants.run`). */
    const lastRequest = new Map<string, number>()
    /** Tenants whose hold failed (services not starting, the database away), until a hold starts them. */
    const failing = new Map<string, { readonly log: OutageLog.OutageLog; readonly since: number; attempts: number; error: string }>()
    /** A tenant's worker went idle: its hold checks now. */
    const onIdle = (tenantId: string) =>
      Effect.suspend(() => {
        const state = holds.get(tenantId)
        return state === undefined ? Effect.void : Effect.asVoid(Deferred.succeed(state.idle, undefined))
      })
    /** Tenants whose services run (the `whizbang_tenants_active` gauge). */
    let running = 0
    const stacks = yield* RcMap.make({
      lookup: (tenantId: string): Effect.Effect<Stack, Whizbang.Errors, Scope.Scope> =>
        Effect.gen(function* () {
          const previous = stopping.get(tenantId)
          if (previous !== undefined) yield* Deferred.await(previous)
          const stopped = yield* Deferred.make<void>()
          stopping.set(tenantId, stopped)
          // Registered first, so it runs last: after the services' own finalizers.
          yield* Effect.addFinalizer(() =>
            Effect.andThen(
              Effect.sync(() => {
                if (stopping.get(tenantId) === stopped) stopping.delete(tenantId)
              }),
              Deferred.succeed(stopped, undefined)
            )
          )
          // Built with the tenant in context: the fibers its services fork (worker, receptors, dispatcher) inherit it,
          // so `Tenants.current` answers there too.
          const context = yield* Layer.build(stack(client.forSchema(catalog.schemaOf(tenantId)), serves(tenantId), onIdle(tenantId))).pipe(
            Effect.provideService(CurrentTenant, tenantId)
          )
          yield* Effect.logDebug("tenant services started", { tenant: tenantId })
          running += 1
          yield* metrics.active(running)
          yield* Effect.addFinalizer(() => Effect.suspend(() => metrics.active(--running)))
          return context
        }),
      idleTimeToLive: options.idleTimeToLive
    })

    /**
     * The tenant's services for the current scope. An RcMap keeps a failed lookup like a value until it expires: a
     * failure is dropped at once, so the next use (a request, the fleet's retry) tries again.
     */
    const acquire = (tenantId: string) =>
      RcMap.get(stacks, tenantId).pipe(
        Effect.tapCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.void : RcMap.invalidate(stacks, tenantId)))
      )

    const resolve = (tenantId: string) =>
      Effect.gen(function* () {
        const id = yield* catalog.validate(tenantId)
        if (known.has(id)) return id
        // Added in another process, its notification not here yet: the catalog decides.
        const tenant = yield* catalog.get(id)
        known.set(tenant.id, tenant.schema)
        bySchema.set(tenant.schema, tenant.id)
        return id
      })

    const run: Shape["run"] = (tenantId, effect) =>
      Effect.flatMap(resolve(tenantId), (id) =>
        Effect.scoped(
          Effect.andThen(
            Effect.sync(() => lastRequest.set(id, Date.now())),
            Effect.flatMap(acquire(id), (context) => effect.pipe(Effect.provideContext(context), Effect.provideService(CurrentTenant, id)))
          )
        )
      )

    const metrics = TenantMetrics.make(options.metricsPerTenant)
    const active = Effect.map(RcMap.keys(stacks), (keys) => [...keys])

    {
      const busy = (tenantId: string) => PgOperations.TenantWork.check(client.forSchema(catalog.schemaOf(tenantId)), self)

      /** Tenants put back for another process since they were last held (see the module notes). */
      const deferred = new Set<string>()
      /** Whether a tenant that nobody serves yet waits for a slot: only then is one served elsewhere put back. */
      const othersWait = () => waiting.some((id) => !deferred.has(id))

      /**
       * Holds the tenant's services while it has work: checked when its worker goes idle (or every `idleCheck`),
       * let go when a check finds nothing and no notification came meanwhile; handed on after `timeSlice` when other
       * tenants wait for a slot. A tenant queued while another process drained it is let go after one check, its
       * services never started.
       */
      const hold = (
        tenantId: string,
        state: Hold
      ): Effect.Effect<"idle" | "turn" | "elsewhere", Whizbang.Errors | PostgresError.PostgresError> =>
        Effect.scoped(
          Effect.gen(function* () {
            const contended = othersWait()
            if (!state.dirty || contended) {
              const notified = state.dirty
              state.dirty = false
              const first = yield* busy(tenantId)
              // A notification during the check may be for work committed after its snapshot: counted as work. One
              // that came before it announced work committed before it (appends notify after their commit, a
              // version's registration in its transaction), which the check sees unless another process drained
              // it meanwhile: nothing to start then (bench t: a tenant's first start notifies every process of its
              // versions, and each started the tenant's services after the first had drained it).
              if (!first.busy && !state.dirty) return "idle" as const
              state.dirty ||= notified
              // Put back once in a row at most: an instance elsewhere may not run all of its work (a rolling deploy's
              // old instance, a subset of perspectives), so its next turn holds it whatever the queue.
              if (first.elsewhere && !deferred.has(tenantId) && othersWait()) return "elsewhere" as const
            }
            state.dirty = false
            deferred.delete(tenantId)
            yield* acquire(tenantId)
            const recovered = failing.get(tenantId)
            if (recovered !== undefined) {
              failing.delete(tenantId)
              yield* recovered.log.succeeded
              yield* metrics.failing(failing.size)
            }
            const since = Date.now()
            while (true) {
              const saidIdle = yield* Effect.raceFirst(
                Effect.as(Deferred.await(state.idle), true),
                Effect.as(Effect.sleep(options.idleCheck), false)
              )
              state.idle = yield* Deferred.make<void>()
              // The worker found nothing after the notifications so far: work they announced was committed before
              // its claim. The check below covers what came since.
              if (saidIdle) state.dirty = false
              const turnOver = waiting.length > 0 && Date.now() - since >= Duration.toMillis(options.timeSlice)
              if (state.dirty && !turnOver) {
                state.dirty = false
                continue
              }
              const now = yield* busy(tenantId)
              yield* metrics.lag(tenantId, now.lagSeconds)
              // A notification that came while the check ran may be for work committed after its snapshot.
              if (!now.busy && !state.dirty) {
                yield* Effect.logDebug("tenant idle", { tenant: tenantId, heldMs: Date.now() - since, workerSaidIdle: saidIdle })
                return "idle" as const
              }
              if (turnOver) return "turn" as const
              state.dirty = false
            }
          })
        )

      /** Starts holds while slots are free. */
      const pump: Effect.Effect<void> = Effect.suspend(() => {
        const starts: Array<Effect.Effect<void>> = []
        while (holds.size < options.maxActive && waiting.length > 0) {
          const tenantId = waiting.shift()!
          queued.delete(tenantId)
          if (!known.has(tenantId) || holds.has(tenantId)) continue
          const state: Hold = { dirty: queuedDirty.delete(tenantId), fiber: undefined, idle: Deferred.makeUnsafe<void>() }
          holds.set(tenantId, state)
          starts.push(
            Effect.map(
              Effect.forkIn(
                hold(tenantId, state).pipe(
                  Effect.onExit((exit) =>
                    Exit.isSuccess(exit)
                      ? afterHold(tenantId, exit.value)
                      : Cause.hasInterruptsOnly(exit.cause)
                        ? afterHold(tenantId, "stopped")
                        : Effect.andThen(failed(tenantId, exit.cause), afterHold(tenantId, "failed"))
                  ),
                  Effect.ignore
                ),
                scope
              ),
              (fiber) => {
                state.fiber = fiber
              }
            )
          )
        }
        return Effect.andThen(Effect.all(starts, { discard: true }), metrics.waiting(waiting.length))
      })

      /**
       * After a hold: the slot goes to the next tenant waiting. Its services stay `idleTimeToLive` for the next work
       * or request when nobody waits (or a request came lately), else stop now. A tenant handed on after its time
       * slice waits again at the back; one whose services failed is tried again after `idleCheck` while it is a tenant.
       */
      const afterHold = (tenantId: string, end: "idle" | "turn" | "elsewhere" | "failed" | "stopped"): Effect.Effect<void> =>
        Effect.gen(function* () {
          const state = holds.get(tenantId)
          holds.delete(tenantId)
          if (end === "elsewhere") {
            deferred.add(tenantId)
            enqueue(tenantId, state?.dirty === true)
            yield* Effect.logDebug("tenant served elsewhere: put back", { tenant: tenantId, waiting: waiting.length })
            return yield* pump
          }
          deferred.delete(tenantId)
          yield* metrics.released(tenantId)
          const recent = Date.now() - (lastRequest.get(tenantId) ?? 0) < Duration.toMillis(options.idleTimeToLive)
          if (end !== "stopped" && (waiting.length > 0 || end === "turn") && !recent) yield* RcMap.invalidate(stacks, tenantId)
          if (end === "turn") enqueue(tenantId, true)
          if (end === "failed") {
            yield* Effect.forkIn(
              Effect.andThen(
                Effect.sleep(options.idleCheck),
                Effect.suspend(() => (known.has(tenantId) ? activate(tenantId) : Effect.void))
              ),
              scope
            )
          }
          yield* pump
        })

      /** A failed hold: logged once per run of failures (then a reminder a minute), named by `status`. */
      const failed = (tenantId: string, cause: Cause.Cause<unknown>) =>
        Effect.suspend(() => {
          const entry = failing.get(tenantId) ?? {
            log: OutageLog.unsafeMake(`tenant ${tenantId}: starting its services (retried every idleCheck while it is a tenant)`),
            since: Date.now(),
            attempts: 0,
            error: ""
          }
          entry.attempts += 1
          entry.error = OutageLog.causeMessage(cause)
          failing.set(tenantId, entry)
          return Effect.andThen(entry.log.failed(cause), metrics.failing(failing.size))
        })

      /** Tenants queued with a notification since (their first check is skipped: there is work). */
      const queuedDirty = new Set<string>()
      const enqueue = (tenantId: string, dirty: boolean) => {
        if (dirty) queuedDirty.add(tenantId)
        if (queued.has(tenantId)) return
        queued.add(tenantId)
        waiting.push(tenantId)
      }

      const activate = (tenantId: string): Effect.Effect<void> =>
        Effect.suspend(() => {
          if (!serves(tenantId)) return Effect.void
          const existing = holds.get(tenantId)
          if (existing !== undefined) {
            existing.dirty = true
            return Effect.void
          }
          enqueue(tenantId, true)
          return pump
        })

      const release = (tenantId: string) =>
        Effect.suspend(() => {
          const state = holds.get(tenantId)
          if (queued.delete(tenantId)) waiting.splice(waiting.indexOf(tenantId), 1)
          queuedDirty.delete(tenantId)
          deferred.delete(tenantId)
          failing.delete(tenantId)
          return Effect.andThen(state?.fiber === undefined ? Effect.void : Fiber.interrupt(state.fiber), RcMap.invalidate(stacks, tenantId))
        })

      /**
       * At (re)connect, notifications sent meanwhile are lost: every tenant served is queued, each checked when its
       * turn comes (one statement), in an order of this process's own so that processes sweeping together start on
       * different tenants.
       */
      const sweep = Effect.gen(function* () {
        const ids = [...known.keys()].filter(serves)
        for (const id of shuffled(ids)) if (!holds.has(id)) enqueue(id, false)
        yield* pump
        yield* Effect.logDebug("tenant sweep", { tenants: ids.length, held: holds.size, waiting: waiting.length })
      })

      const onWork = (payload: string | undefined): Effect.Effect<void> => {
        if (payload === undefined) return sweep
        const newline = payload.indexOf("\n")
        const schema = newline < 0 ? payload : payload.slice(0, newline)
        const id = bySchema.get(schema)
        if (id !== undefined) return activate(id)
        // A tenant added in another process (its catalog notification may come later), or another service's schema.
        if (!schema.startsWith(catalog.prefix)) return Effect.void
        return Effect.flatMap(Effect.ignore(refresh), () => {
          const added = bySchema.get(schema)
          return added === undefined ? Effect.void : activate(added)
        })
      }

      const onCatalog = (tenantId: string | undefined): Effect.Effect<void> =>
        Effect.flatMap(Effect.ignore(refresh), () => (tenantId !== undefined && !known.has(tenantId) ? release(tenantId) : Effect.void))

      yield* Effect.forkScoped(Stream.runForEach(catalog.changes, onCatalog))
      yield* Effect.forkScoped(Stream.runForEach(client.listenAll("wh_work"), onWork))
      // A version registered (or changed) in a tenant that has no work, e.g. by a process that only writes: its build
      // needs the tenant's services too. Versions changes come on `wh_processed` as `<schema>\n@versions...` lines.
      yield* Effect.forkScoped(
        Stream.runForEach(client.listenAll("wh_processed"), (payload) => {
          if (payload === undefined) return Effect.void
          const newline = payload.indexOf("\n")
          if (newline < 0 || !payload.startsWith("@versions", newline + 1)) return Effect.void
          return onWork(payload.slice(0, newline))
        })
      )
    }

    const status: Effect.Effect<FleetStatus> = Effect.sync(() => ({
      held: [...holds.keys()],
      waiting: [...waiting],
      failing: [...failing].map(([tenantId, f]) => ({ tenantId, error: f.error, since: new Date(f.since), attempts: f.attempts }))
    }))

    const add: Shape["add"] = (tenantId) =>
      Effect.flatMap(catalog.add(tenantId), (tenant) => Effect.as(run(tenant.id, Effect.void), tenant))

    return { run, add, catalog, active, status }
  })
