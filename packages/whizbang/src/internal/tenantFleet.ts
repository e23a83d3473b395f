// The services of many tenants in one process: each tenant's `Whizbang.layer` services (its "stack") built on a
// view of the process's one client bound to the tenant's schema, kept in an `RcMap` while something holds them
// (a request in `Tenants.run`, or the fleet while the tenant has work) and `idleTimeToLive` after.
//
// Finding work without polling each tenant: appends NOTIFY `wh_work` with their schema (the payload), and the fleet
// LISTENs to every schema on the process's one LISTEN connection. A notified tenant is held until a check finds its
// queue empty and no version building, and no notification came since the previous check; then let go. So a
// tenant costs statements only while it has work, and idle tenants cost nothing. Notifications sent while the
// LISTEN connection was down are lost: on every (re)connect the fleet sweeps the catalog once (one statement per
// tenant) and holds the tenants with work. The worker of a held tenant runs exactly as a single-tenant worker
// (leases, fencing, rewinds, versions, dead letters), its statements on the process's one worker pool, whose FIFO
// queue serves the tenants in turn.
import { DurationOption } from "@whizbang/core"
import { type PgClient, type PgTenants, PostgresError, type TenantError } from "@whizbang/postgres"
import { Cause, type Context, Deferred, Duration, Effect, Fiber, Layer, RcMap, Result, Schedule, type Scope, Stream } from "effect"
import { CurrentTenant, type Shape } from "../Tenants.js"
import type * as Whizbang from "../Whizbang.js"
import * as TenantMetrics from "./tenantMetrics.js"

/** How the fleet runs (decoded). */
export interface Options {
  readonly idleTimeToLive: Duration.Duration
  readonly idleCheck: Duration.Duration
  /**
   * Apply only these tenants' work (requests for the others get their write side, no worker); `undefined`: every
   * tenant; empty: a process that only writes.
   */
  readonly serve: ReadonlySet<string> | undefined
  /** Label the lag gauge with each tenant with work (`whizbang_tenant_lag_seconds`); default off. */
  readonly metricsPerTenant: boolean
}

type Stack = Context.Context<Whizbang.WriteServices>

interface Hold {
  /** A notification came since the last idle check. */
  dirty: boolean
  fiber: Fiber.Fiber<void> | undefined
}

// Whether the tenant has anything for a worker, and its lag (seconds since its oldest pending event).
const busySql = `SELECT EXISTS (SELECT 1 FROM wh_perspective_events)
  OR EXISTS (SELECT 1 FROM wh_lifecycle_pending)
  OR EXISTS (SELECT 1 FROM wh_perspective_versions WHERE state = 'building') AS busy,
  coalesce(extract(epoch FROM now() - (SELECT min(created_at) FROM wh_perspective_events)), 0)::float8 AS lag`

/** `Tenants` over `catalog`, each tenant's stack made by `stack` on its schema's view of `client`. */
export const make = (
  client: PgClient.Shape,
  catalog: PgTenants.Shape,
  /** A tenant's services: with its worker when this process serves the tenant (`served`), else the write side. */
  stack: (client: PgClient.Shape, served: boolean) => Layer.Layer<Whizbang.WriteServices, Whizbang.Errors>,
  options: Options
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
          const context = yield* Layer.build(stack(client.forSchema(catalog.schemaOf(tenantId)), serves(tenantId))).pipe(
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
          Effect.flatMap(RcMap.get(stacks, id), (context) =>
            effect.pipe(Effect.provideContext(context), Effect.provideService(CurrentTenant, id))
          )
        )
      )

    const metrics = TenantMetrics.make(options.metricsPerTenant)
    const active = Effect.map(RcMap.keys(stacks), (keys) => [...keys])

    {
      const holds = new Map<string, Hold>()
      const busy = (tenantId: string) =>
        Effect.map(
          client.forSchema(catalog.schemaOf(tenantId)).query<{ busy: boolean; lag: number }>(busySql, [], { prepared: true }),
          (rows) => ({ busy: rows[0]?.busy === true, lag: rows[0]?.lag ?? 0 })
        )

      /** Holds the tenant's stack until it is idle; a stack that fails to start is retried while there is work. */
      const hold = (tenantId: string, state: Hold) =>
        Effect.scoped(
          Effect.gen(function* () {
            yield* RcMap.get(stacks, tenantId)
            while (true) {
              yield* Effect.sleep(options.idleCheck)
              if (state.dirty) {
                state.dirty = false
                continue
              }
              const now = yield* busy(tenantId)
              yield* metrics.lag(tenantId, now.lag)
              // A notification that came while the check ran may be for work committed after its snapshot.
              if (!now.busy && !state.dirty) return
            }
          })
        ).pipe(
          Effect.tapCause((cause) =>
            Effect.logWarning(`tenant ${tenantId}: its services failed; retrying while it is a tenant`, Cause.pretty(cause))
          ),
          // Only while it is still a tenant: a removed tenant's services are not started again.
          Effect.retry({ schedule: Schedule.spaced(options.idleCheck), while: () => known.has(tenantId) }),
          Effect.ignore
        )

      const activate = (tenantId: string): Effect.Effect<void> =>
        Effect.suspend(() => {
          if (!serves(tenantId)) return Effect.void
          const existing = holds.get(tenantId)
          if (existing !== undefined) {
            existing.dirty = true
            return Effect.void
          }
          const state: Hold = { dirty: false, fiber: undefined }
          holds.set(tenantId, state)
          return Effect.map(
            Effect.forkIn(
              hold(tenantId, state).pipe(
                Effect.ensuring(
                  Effect.andThen(
                    Effect.sync(() => holds.delete(tenantId)),
                    metrics.released(tenantId)
                  )
                )
              ),
              scope
            ),
            (fiber) => {
              state.fiber = fiber
            }
          )
        })

      const release = (tenantId: string) =>
        Effect.suspend(() => {
          const state = holds.get(tenantId)
          holds.delete(tenantId)
          return Effect.andThen(state?.fiber === undefined ? Effect.void : Fiber.interrupt(state.fiber), RcMap.invalidate(stacks, tenantId))
        })

      const sweep = Effect.gen(function* () {
        const ids = [...known.keys()].filter(serves)
        yield* Effect.forEach(
          ids,
          (id) =>
            Effect.flatMap(
              busy(id).pipe(
                Effect.tapError((error) => Effect.logWarning("tenant sweep: could not read the queue", { tenant: id, error })),
                Effect.orElseSucceed(() => ({ busy: true, lag: 0 }))
              ),
              (now) => (now.busy ? activate(id) : Effect.void)
            ),
          { concurrency: 4, discard: true }
        )
        yield* Effect.logDebug("tenant sweep", { tenants: ids.length, held: holds.size })
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

    return { run, catalog, active }
  })

/** The fleet's options as given (`tenants` of the umbrella's config, less the catalog's). */
export interface Input {
  readonly idleTimeToLive?: Duration.Input | undefined
  readonly idleCheck?: Duration.Input | undefined
  readonly serve?: ReadonlyArray<string> | undefined
  readonly metricsPerTenant?: boolean | undefined
}

const duration = (option: string, input: unknown, fallback: Duration.Duration) =>
  Result.match(DurationOption.checkOr(input, "positive", fallback), {
    onSuccess: Effect.succeed,
    onFailure: (message) => Effect.fail(new PostgresError.PostgresConfigError({ option, message: `${option} ${message}` }))
  })

/** Checks the fleet's options without connecting; errors name `tenants.<option>`. */
export const decodeOptions = (
  input: Input | undefined,
  validate: (tenantId: unknown) => Effect.Effect<string, TenantError.InvalidTenantId>
): Effect.Effect<Options, PostgresError.PostgresConfigError> =>
  Effect.gen(function* () {
    const idleTimeToLive = yield* duration("tenants.idleTimeToLive", input?.idleTimeToLive, Duration.seconds(30))
    const idleCheck = yield* duration("tenants.idleCheck", input?.idleCheck, Duration.seconds(2))
    const serve =
      input?.serve === undefined
        ? undefined
        : new Set(
            yield* Effect.forEach(input.serve, (id) =>
              validate(id).pipe(
                Effect.mapError(
                  (error) => new PostgresError.PostgresConfigError({ option: "tenants.serve", message: `tenants.serve: ${error.message}` })
                )
              )
            )
          )
    const metricsPerTenant = input?.metricsPerTenant ?? false
    if (typeof metricsPerTenant !== "boolean") {
      return yield* new PostgresError.PostgresConfigError({
        option: "tenants.metricsPerTenant",
        message: `tenants.metricsPerTenant must be a boolean, got ${JSON.stringify(metricsPerTenant)}`
      })
    }
    return { idleTimeToLive, idleCheck, serve, metricsPerTenant }
  })
