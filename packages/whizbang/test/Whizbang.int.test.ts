import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Layer, Option, Schedule } from "effect"
import {
  EventId,
  EventStore,
  PerspectiveRewinder,
  PerspectiveStore,
  PerspectiveWorker,
  PgClient,
  PgHealth,
  PgWatchdog,
  ScopedEventTracker,
  SyncAwareLens,
  SyncFilter,
  Whizbang
} from "whizbang"
import * as Fixtures from "./fixtures.js"

const app = (url: string, config: Partial<Whizbang.Config> = {}) =>
  Layer.unwrap(
    Effect.map(Fixtures.definitions, ({ events, perspectives }) =>
      Whizbang.layer({
        databaseUrl: url,
        schema: "umbrella",
        events,
        perspectives,
        options: Fixtures.fast,
        watchdog: { interval: null },
        ...config
      })
    )
  )

const schemaExists = (url: string, schema: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const client = yield* PgClient.make({ url, maxConnections: 1 })
      const rows = yield* client.query("SELECT 1 FROM information_schema.schemata WHERE schema_name = $1", [schema])
      return rows.length > 0
    })
  )

/** Runs `body` in another instance without a worker (`layerWithoutWorker`), in its own runtime: nothing memoized is shared. */
const elsewhere = (url: string, body: Effect.Effect<unknown, unknown, EventStore.EventStore | PgClient.PgClient>) =>
  Effect.promise(() =>
    Effect.runPromise(
      Effect.scoped(
        Effect.orDie(body).pipe(
          Effect.provide(
            Layer.unwrap(
              Effect.map(Fixtures.definitions, ({ events, perspectives }) =>
                Whizbang.layerWithoutWorker({ databaseUrl: url, schema: "umbrella", events, perspectives, watchdog: { interval: null } })
              )
            )
          )
        )
      )
    )
  )

const { withDatabase } = Fixtures

describe("Whizbang.layer", () => {
  it.live("a start refused for a bad option has not touched the database: the schema does not exist", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const refusals: ReadonlyArray<Partial<Whizbang.Config>> = [
          { snapshots: { every: 0 } },
          { queueVacuum: { everyRows: 0 } },
          { maxConnections: 0 },
          { options: { maxStreamsPerBatch: -1 } },
          { failureBackoff: { initial: 0, multiplier: 2, max: Duration.millis(10) } },
          { streamLocks: { lockTimeout: Duration.seconds(1), keepAliveInterval: Duration.seconds(1) } }
        ]
        for (const config of refusals) {
          const error = yield* Effect.flip(Effect.scoped(Layer.build(app(url, config))))
          expect(error._tag, JSON.stringify(config)).not.toBe("PostgresError")
          expect(yield* schemaExists(url, "umbrella"), JSON.stringify(config)).toBe(false)
        }
      })
    )
  )

  it.live(
    "wires everything: a tracked append is read back synced through the lens; rewinder, health and watchdog are there; maxConnections 1 is enough",
    () =>
      withDatabase((url) =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const id = EventId.unsafeMake()
          yield* store.append(id, [
            Fixtures.Deposited.make({ accountId: id, amount: 100 }),
            Fixtures.Deposited.make({ accountId: id, amount: 42 })
          ])
          // No awaitIdle: the umbrella's event store tracked the append, so the lens waits for it.
          const { row, sync } = yield* SyncAwareLens.getById(
            Fixtures.balance,
            id,
            SyncFilter.forStream(id).withTimeout(Duration.seconds(10))
          )
          // Fresh either way: Synced when the lens waited for the events, NoPendingEvents when the worker (woken by
          // the append's NOTIFY) had applied both before the lens asked. The row is the claim: it has both events.
          expect(["Synced", "NoPendingEvents"]).toContain(sync._tag)
          expect(Option.getOrThrow(row).data).toEqual({ total: 142 })
          yield* Effect.service(PerspectiveRewinder.PerspectiveRewinder)
          const health = yield* (yield* Effect.service(PgHealth.PgHealth)).check
          expect(health.status).toBe("healthy")
          expect(yield* (yield* Effect.service(PgWatchdog.PgWatchdog)).diagnose).toEqual([])
          yield* (yield* Effect.service(PerspectiveWorker.PerspectiveWorker)).awaitIdle
          const models = yield* Effect.service(PerspectiveStore.PerspectiveStore)
          expect(Option.isSome(yield* models.getById("balance", id))).toBe(true)
        }).pipe(Effect.provide(app(url, { maxConnections: 1 })))
      )
  )

  it.live(
    "currentScope() through whizbang: inside ScopedEventTracker.withScope every read sees its own write (20 of 20); outside a scope the read is a typed NoScope error, never NoPendingEvents over a stale row",
    () =>
      withDatabase((url) =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const id = EventId.unsafeMake()
          const reads: Array<{ readonly outcome: string; readonly total: number | undefined }> = []
          for (let i = 1; i <= 20; i++) {
            const { row, sync } = yield* ScopedEventTracker.withScope(
              Effect.gen(function* () {
                yield* store.append(id, [Fixtures.Deposited.make({ accountId: id, amount: 1 })])
                return yield* SyncAwareLens.getById(Fixtures.balance, id, SyncFilter.currentScope().withTimeout(Duration.seconds(10)))
              })
            )
            reads.push({ outcome: sync._tag, total: Option.getOrUndefined(Option.map(row, (r) => r.data.total)) })
          }
          expect(reads.filter((r) => r.outcome !== "Synced" && r.outcome !== "NoPendingEvents")).toEqual([])
          expect(reads.map((r) => r.total)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
          // Outside a scope the filter could match nothing: refused, naming how to open one.
          const other = EventId.unsafeMake()
          yield* store.append(other, [Fixtures.Deposited.make({ accountId: other, amount: 5 })])
          const refused = yield* Effect.flip(SyncAwareLens.getById(Fixtures.balance, other, SyncFilter.currentScope()))
          expect(refused).toMatchObject({ _tag: "SyncArgumentError", reason: { _tag: "NoScope", perspectiveName: "balance" } })
          expect(refused.message).toContain("ScopedEventTracker.withScope")
        }).pipe(Effect.provide(app(url)))
      )
  )

  it.live("queueVacuum: the worker vacuums its queue tables itself once every N work rows it removed", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const schema = "umbrella_vacuum"
        const vacuums = Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
          client.query<{ relname: string; n: number }>(
            "SELECT relname, vacuum_count::int AS n FROM pg_stat_user_tables WHERE schemaname = $1 AND relname IN ('wh_perspective_events', 'wh_active_streams') ORDER BY relname",
            [schema]
          )
        )
        const totals = yield* Effect.gen(function* () {
          const ids = Array.from({ length: 20 }, () => EventId.unsafeMake())
          // 20 streams of 10 events: 200 work rows removed, every 50 of them a vacuum is due.
          yield* Effect.forEach(
            ids,
            (id) =>
              EventStore.append(
                id,
                Array.from({ length: 10 }, () => Fixtures.Deposited.make({ accountId: id, amount: 1 }))
              ),
            { concurrency: 4, discard: true }
          )
          yield* (yield* Effect.service(PerspectiveWorker.PerspectiveWorker)).awaitIdle
          // The vacuum runs beside the cycles: wait (bounded) until the statistics show it.
          const after = yield* vacuums.pipe(
            Effect.repeat({ until: (rows) => rows.every((r) => r.n > 0), schedule: Schedule.spaced("50 millis"), times: 200 })
          )
          const models = yield* Effect.service(PerspectiveStore.PerspectiveStore)
          const rows = yield* Effect.forEach(ids, (id) => models.getById("balance", id))
          return { after, totals: rows.map((r) => (Option.getOrThrow(r).data as { total: number }).total) }
        }).pipe(Effect.provide(app(url, { schema, queueVacuum: { everyRows: 50 } })))
        expect(totals.after.map((r) => r.relname)).toEqual(["wh_active_streams", "wh_perspective_events"])
        for (const row of totals.after) expect(row.n, row.relname).toBeGreaterThan(0)
        expect(totals.totals).toEqual(Array.from({ length: 20 }, () => 10))
      })
    )
  )

  it.live(
    "preparedStatements: on by default the service's appends and reads run prepared; off, nothing is prepared, and a write is still read back synced",
    () =>
      withDatabase((url) =>
        Effect.gen(function* () {
          // maxConnections 1: the append, the read and the look-up share the one session of the service's pool.
          const run = (config: Partial<Whizbang.Config>) =>
            Effect.scoped(
              Effect.gen(function* () {
                const id = EventId.unsafeMake()
                yield* EventStore.append(id, [Fixtures.Deposited.make({ accountId: id, amount: 7 })])
                const { row, sync } = yield* SyncAwareLens.getById(
                  Fixtures.balance,
                  id,
                  SyncFilter.forStream(id).withTimeout(Duration.seconds(10))
                )
                const client = yield* Effect.service(PgClient.PgClient)
                const [prepared] = yield* client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_prepared_statements")
                return {
                  fresh: sync._tag === "Synced" || sync._tag === "NoPendingEvents",
                  total: Option.getOrThrow(row).data.total,
                  prepared: prepared!.n
                }
              }).pipe(Effect.provide(app(url, { maxConnections: 1, ...config })))
            )
          const on = yield* run({})
          expect(on).toMatchObject({ fresh: true, total: 7 })
          expect(on.prepared).toBeGreaterThan(0)
          expect(yield* run({ preparedStatements: false })).toEqual({ fresh: true, total: 7, prepared: 0 })
        })
      )
  )

  it.live("jit: off for the service's sessions by default, the server's own setting with jit: true", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        // pg_settings names where the session's value comes from: "client" is the connection's startup option.
        const jitOf = (config: Partial<Whizbang.Config>) =>
          Effect.scoped(
            Effect.gen(function* () {
              const client = yield* Effect.service(PgClient.PgClient)
              const [row] = yield* client.query<{ setting: string; source: string }>(
                "SELECT setting, source FROM pg_settings WHERE name = 'jit'"
              )
              return row!
            }).pipe(Effect.provide(app(url, config)))
          )
        expect(yield* jitOf({})).toEqual({ setting: "off", source: "client" })
        expect(yield* jitOf({ jit: false })).toEqual({ setting: "off", source: "client" })
        expect((yield* jitOf({ jit: true })).source).not.toBe("client")
      })
    )
  )

  it.live("applicationName is shown in pg_stat_activity: the service name by default, else as given", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const names = (config: Partial<Whizbang.Config>) =>
          Effect.scoped(
            Effect.gen(function* () {
              const client = yield* Effect.service(PgClient.PgClient)
              const rows = yield* client.query<{ application_name: string }>(
                "SELECT DISTINCT application_name FROM pg_stat_activity WHERE datname = current_database() AND application_name <> '' ORDER BY 1"
              )
              return rows.map((r) => r.application_name)
            }).pipe(Effect.provide(app(url, config)))
          )
        expect(yield* names({ serviceName: "orders-api" })).toContain("orders-api")
        expect(yield* names({ serviceName: "orders-api", applicationName: "orders-api-7" })).toContain("orders-api-7")
      })
    )
  )

  it.live(
    "the worker has connections of its own: with every connection of the service's pool held by requests, new events are still applied",
    () =>
      withDatabase((url) =>
        Effect.gen(function* () {
          const id = EventId.unsafeMake()
          const applied = yield* Deferred.make<void>()
          const hooks = {
            onPerspectiveEventProcessed: (group: { readonly streamId: string }) =>
              group.streamId === id ? Deferred.succeed(applied, undefined).pipe(Effect.asVoid) : Effect.void
          }
          yield* Effect.gen(function* () {
            const client = yield* Effect.service(PgClient.PgClient)
            const release = yield* Deferred.make<void>()
            // Both connections of the pool are taken by transactions that wait (requests stuck on a slow call).
            const holders = []
            for (let k = 0; k < 2; k++) {
              const held = yield* Deferred.make<void>()
              holders.push(
                yield* Effect.forkChild(client.withTransaction(Effect.andThen(Deferred.succeed(held, undefined), Deferred.await(release))))
              )
              yield* Deferred.await(held)
            }
            // Another instance (no worker, its own runtime: nothing memoized is shared) appends; this instance's
            // worker must apply it while its pool is full.
            yield* elsewhere(
              url,
              Effect.flatMap(EventStore.EventStore, (store) => store.append(id, [Fixtures.Deposited.make({ accountId: id, amount: 7 })]))
            )
            // Less than the pool's connect timeout (10 s): a worker queued behind the held connections would miss it.
            // The requests end either way, so a failure is reported at once.
            yield* Deferred.await(applied).pipe(Effect.timeout(Duration.seconds(8)), Effect.ensuring(Deferred.succeed(release, undefined)))
            yield* Fiber.joinAll(holders)
            const models = yield* Effect.service(PerspectiveStore.PerspectiveStore)
            expect(Option.getOrThrow(yield* models.getById("balance", id)).data).toEqual({ total: 7 })
          }).pipe(Effect.provide(app(url, { maxConnections: 2, hooks })))
        })
      )
  )

  it.live(
    "workers are woken after appends commit: two writer instances append concurrently, one inside its own transaction; a worker polling once a minute applies every event",
    () =>
      withDatabase((url) =>
        Effect.gen(function* () {
          const streams = Array.from({ length: 10 }, () => EventId.unsafeMake())
          const perWriter = 20
          const expected = 2 * perWriter + 1
          // Two milestones: the writers' own appends all applied, then the one made inside a transaction.
          const ownApplied = yield* Deferred.make<void>()
          const allApplied = yield* Deferred.make<void>()
          let seen = 0
          const hooks = {
            onPerspectiveEventProcessed: (group: { readonly eventIds: ReadonlyArray<string> }) =>
              Effect.suspend(() => {
                seen += group.eventIds.length
                return Effect.asVoid(
                  Effect.all([
                    seen >= 2 * perWriter ? Deferred.succeed(ownApplied, undefined) : Effect.void,
                    seen >= expected ? Deferred.succeed(allApplied, undefined) : Effect.void
                  ])
                )
              })
          }
          const slow = { pollingInterval: Duration.minutes(1), notifyHealthyPollingInterval: Duration.minutes(1) }
          yield* Effect.gen(function* () {
            const writer = (body: Effect.Effect<unknown, unknown, EventStore.EventStore | PgClient.PgClient>) => elsewhere(url, body)
            const appends = (k: number) =>
              Effect.flatMap(EventStore.EventStore, (store) =>
                Effect.forEach(
                  Array.from({ length: perWriter }, (_, i) => streams[(k + i) % streams.length]!),
                  (id) => store.append(id, [Fixtures.Deposited.make({ accountId: id, amount: 1 })]),
                  { concurrency: 4, discard: true }
                )
              )
            const inTransaction = Effect.gen(function* () {
              const store = yield* EventStore.EventStore
              const client = yield* PgClient.PgClient
              yield* client.withTransaction(store.append(streams[0]!, [Fixtures.Deposited.make({ accountId: streams[0]!, amount: 1 })]))
            })
            yield* Effect.all([writer(appends(0)), writer(appends(1))], { concurrency: "unbounded" })
            // Far below the minute-long poll: only the wake-ups after the commits can have made the worker apply them.
            yield* Deferred.await(ownApplied).pipe(Effect.timeout(Duration.seconds(10)))
            yield* writer(inTransaction)
            yield* Deferred.await(allApplied).pipe(Effect.timeout(Duration.seconds(10)))
            const models = yield* Effect.service(PerspectiveStore.PerspectiveStore)
            const rows = yield* models.getMany("balance", streams)
            expect([...rows.values()].reduce((sum, row) => sum + (row.data as { total: number }).total, 0)).toBe(expected)
          }).pipe(Effect.provide(app(url, { options: slow, hooks })))
        })
      )
  )
})
