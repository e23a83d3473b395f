import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Metric, Option, Schedule, Schema } from "effect"
import { EventId, EventStore, Perspective, PgClient, Receptor, SyncAwareLens, SyncFilter, TenantError, Tenants, Whizbang } from "whizbang"
import * as Fixtures from "./fixtures.js"

const app = (url: string, config: Partial<Whizbang.Config> = {}) =>
  Layer.unwrap(
    Effect.map(Fixtures.definitions, ({ events, perspectives }) =>
      Whizbang.layerTenants({
        databaseUrl: url,
        schema: "saas",
        events,
        perspectives,
        options: Fixtures.fast,
        watchdog: { interval: null },
        tenants: { idleCheck: Duration.millis(100), idleTimeToLive: Duration.millis(200) },
        ...config
      })
    )
  )

const { withDatabase } = Fixtures

/** A deposit through the tenant's own event store, read back synced through its lens. */
const depositAndRead = (tenantId: string, accountId: string, amount: number) =>
  Tenants.run(
    tenantId,
    Effect.gen(function* () {
      yield* Fixtures.deposit(accountId, amount)
      const { row } = yield* SyncAwareLens.getById(
        Fixtures.balance,
        accountId,
        SyncFilter.forStream(accountId).withTimeout(Duration.seconds(10))
      )
      return Option.getOrUndefined(Option.map(row, (r) => r.data.total))
    })
  )

/** A backlog in the tenant in context: `streams` new streams of `perStream` deposits each, two streams at a time. */
const backlog = (streams: number, perStream: number) =>
  Effect.forEach(
    Array.from({ length: streams }, () => EventId.unsafeMake()),
    (stream) =>
      Effect.flatMap(EventStore.EventStore, (store) =>
        store.append(
          stream,
          Array.from({ length: perStream }, () => Fixtures.Deposited.make({ accountId: stream, amount: 1 }))
        )
      ),
    { discard: true, concurrency: 2 }
  )

/**
 * Tenants "busy" (a backlog of 80 streams x `perStream` events, 40,000 by default) and "quiet" (nothing yet), written
 * by a process that only writes (serve: []), so no worker has touched them when the test's serving process starts.
 * Tests that need the backlog still there when the quiet tenant was served write 120,000: its claims are fast from
 * the first (the fleet analyzes its queue first), and 40,000 events were drained in a few seconds.
 */
const busyAndQuiet = (url: string, perStream = 500) =>
  Effect.gen(function* () {
    const { catalog } = yield* Tenants.Tenants
    yield* catalog.add("busy")
    yield* catalog.add("quiet")
    yield* Tenants.run("busy", backlog(80, perStream))
  }).pipe(Effect.provide(app(url, { tenants: { serve: [] } })))

/** A serving process with one slot and this time slice. */
const oneSlot = (url: string, timeSlice: Duration.Duration) =>
  app(url, { tenants: { maxActive: 1, timeSlice, idleCheck: Duration.millis(100), idleTimeToLive: Duration.millis(200) } })

/** The busy tenant of {@link busyAndQuiet} still has work: it was not drained first. */
const busyStillWorking = Effect.gen(function* () {
  const client = yield* PgClient.PgClient
  const [left] = yield* client.query<{ n: number }>("SELECT count(*)::int AS n FROM tenant_busy.wh_perspective_events")
  expect(left!.n).toBeGreaterThan(0)
})

describe("Whizbang.layerTenants", () => {
  it.live("tenants are schemas: an append in one is applied and read there, and is nowhere in the other", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const { catalog } = yield* Tenants.Tenants
        yield* catalog.add("acme")
        yield* catalog.add("globex")
        const id = EventId.unsafeMake()
        expect(yield* depositAndRead("acme", id, 5)).toBe(5)
        expect(yield* depositAndRead("globex", id, 7)).toBe(7)
        expect(yield* depositAndRead("acme", id, 1)).toBe(6)
        const client = yield* PgClient.PgClient
        const rows = yield* client.query<{ s: string; n: string }>(
          `SELECT 'acme' AS s, count(*)::text AS n FROM tenant_acme.wh_events UNION ALL SELECT 'globex', count(*)::text FROM tenant_globex.wh_events UNION ALL SELECT 'default', count(*)::text FROM saas.wh_events`
        )
        expect(Object.fromEntries(rows.map((r) => [r.s, Number(r.n)]))).toEqual({ acme: 2, globex: 1, default: 0 })
        const tenants = yield* catalog.list
        expect(tenants.map((t) => [t.id, t.schema, t.state])).toEqual([
          ["default", "saas", "active"],
          ["acme", "tenant_acme", "active"],
          ["globex", "tenant_globex", "active"]
        ])
      }).pipe(Effect.provide(app(url)))
    )
  )

  it.live(
    "no tenant, no fallback: hostile ids are typed errors and write nothing; an unknown tenant is UnknownTenant; CurrentTenant unset is TenantRequired",
    () =>
      withDatabase((url) =>
        Effect.gen(function* () {
          const { catalog } = yield* Tenants.Tenants
          yield* catalog.add("acme")
          const hostile = [
            'a"; DROP SCHEMA saas CASCADE; --',
            "Acme",
            "ünicode",
            "x".repeat(64),
            "pg_catalog",
            "tenant_acme",
            "",
            "1abc",
            "a b"
          ]
          for (const id of hostile) {
            const added = yield* Effect.flip(catalog.add(id))
            expect(added._tag, id).toBe("InvalidTenantId")
            const ran = yield* Effect.flip(Tenants.run(id, Fixtures.deposit(EventId.unsafeMake(), 1)))
            expect(ran._tag, id).toBe("InvalidTenantId")
          }
          const unknown = yield* Effect.flip(Tenants.run("initech", Fixtures.deposit(EventId.unsafeMake(), 1)))
          expect(unknown).toBeInstanceOf(TenantError.UnknownTenant)
          const required = yield* Effect.flip(Tenants.provideCurrent(Fixtures.deposit(EventId.unsafeMake(), 1)))
          expect(required._tag).toBe("TenantRequired")
          // Nothing written anywhere: only the catalog, the default tenant's schema and acme's exist, and no events.
          const client = yield* PgClient.PgClient
          const schemas = yield* client.query<{ nspname: string }>(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'tenant%' OR nspname LIKE 'saas%' ORDER BY 1"
          )
          expect(schemas.map((s) => s.nspname)).toEqual(["saas", "saas_tenants", "tenant_acme"])
          const events = yield* client.query<{ n: string }>("SELECT count(*)::text AS n FROM tenant_acme.wh_events")
          expect(events[0]!.n).toBe("0")
        }).pipe(Effect.provide(app(url)))
      )
  )

  it.live("a tenant removed needs its id again, drops its schema, and is unknown afterwards; the default tenant cannot be removed", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const { catalog } = yield* Tenants.Tenants
        yield* catalog.add("acme")
        expect(yield* depositAndRead("acme", EventId.unsafeMake(), 3)).toBe(3)
        expect((yield* Effect.flip(catalog.remove("acme", { confirm: "acm" })))._tag).toBe("TenantRemovalRefused")
        expect((yield* Effect.flip(catalog.remove("default", { confirm: "default" })))._tag).toBe("TenantRemovalRefused")
        yield* catalog.remove("acme", { confirm: "acme" })
        const client = yield* PgClient.PgClient
        expect(yield* client.query("SELECT 1 FROM pg_namespace WHERE nspname = 'tenant_acme'")).toEqual([])
        const after = yield* Effect.flip(Tenants.run("acme", Fixtures.deposit(EventId.unsafeMake(), 1)))
        expect(after._tag).toBe("UnknownTenant")
        // Added again: a fresh, empty tenant.
        yield* catalog.add("acme")
        expect(yield* depositAndRead("acme", EventId.unsafeMake(), 4)).toBe(4)
      }).pipe(Effect.provide(app(url)))
    )
  )

  it.live("Tenants.add lays the tenant out: versions registered and tables there before its first request; a hostile id adds nothing", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const client = yield* PgClient.PgClient
        const tenant = yield* Tenants.add("acme")
        expect(tenant).toMatchObject({ id: "acme", schema: "tenant_acme", state: "active" })
        const [laidOut] = yield* client.query<{ view: string | null; table: string | null; versions: Array<string> }>(
          `SELECT to_regclass('tenant_acme.wh_per_balance')::text AS view, to_regclass('tenant_acme.wh_per_balance__v1')::text AS table,
                  (SELECT array_agg(perspective_name || ':' || state) FROM tenant_acme.wh_perspective_versions) AS versions`
        )
        expect(laidOut).toEqual({ view: "tenant_acme.wh_per_balance", table: "tenant_acme.wh_per_balance__v1", versions: ["balance:live"] })
        expect((yield* Effect.flip(Tenants.add("acme")))._tag).toBe("TenantConflict")
        expect(yield* depositAndRead("acme", EventId.unsafeMake(), 5)).toBe(5)
        const refused = yield* Effect.flip(Tenants.add("x'; DROP SCHEMA tenant_acme; --"))
        expect(refused._tag).toBe("InvalidTenantId")
        expect((yield* (yield* Tenants.Tenants).catalog.list).map((t) => t.id)).toEqual(["default", "acme"])
      }).pipe(Effect.provide(app(url)))
    )
  )

  it.live("the fleet applies a tenant's work with no request holding it, and lets an idle tenant go", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const tenants = yield* Tenants.Tenants
        yield* tenants.catalog.add("acme")
        const id = EventId.unsafeMake()
        // Appended without waiting: the request lets go at once; only the fleet (woken by wh_work) applies it.
        yield* Tenants.run("acme", Fixtures.deposit(id, 9))
        const total = yield* Tenants.run(
          "acme",
          Effect.flatMap(
            Fixtures.sql<{ total: number }>("SELECT (data->>'total')::int AS total FROM wh_per_balance WHERE id = $1", [id]),
            (rows) => (rows.length === 0 ? Effect.fail("not yet" as const) : Effect.succeed(rows[0]!.total))
          ).pipe(Effect.retry({ times: 200, schedule: Schedule.spaced(Duration.millis(50)) }))
        )
        expect(total).toBe(9)
        // Idle: the fleet and the requests let go, and the services stop; the bounded gauges say so.
        const gauge = (name: string) =>
          Effect.map(Metric.snapshot, (all) =>
            all
              .filter((m) => m.id === name && m.type === "Gauge")
              .map((m) => Number((m.state as { readonly value: number | bigint }).value))
          )
        const state = Effect.all({
          active: tenants.active,
          running: gauge("whizbang_tenants_active"),
          withWork: gauge("whizbang_tenants_with_work"),
          maxLag: gauge("whizbang_tenants_lag_seconds_max"),
          perTenant: gauge("whizbang_tenant_lag_seconds")
        })
        const idle = yield* Effect.repeat(state, {
          until: (s) => s.active.length === 0 && s.running[0] === 0,
          times: 200,
          schedule: Schedule.spaced(Duration.millis(50))
        })
        // Per-tenant series are opt-in (tenants.metricsPerTenant): none here.
        expect(idle).toEqual({ active: [], running: [0], withWork: [0], maxLag: [0], perTenant: [] })
      }).pipe(Effect.provide(app(url)))
    )
  )

  // A tenant's services started by the fleet skip the version rounds at start when its check finds no version work
  // (`TenantStart`), so the check must count a retirement that is due. Here it is the tenant's only version work, next
  // to a deposit written by a process that only writes; the serving process reads the schema directly, so no request
  // of its own starts the tenant's services: only the fleet does.
  it.live("a version due for retirement is retired when the fleet starts the tenant for its live work", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const id = EventId.unsafeMake()
        yield* Effect.gen(function* () {
          const { catalog } = yield* Tenants.Tenants
          yield* catalog.add("acme")
          yield* Tenants.run(
            "acme",
            Effect.andThen(
              Fixtures.sql(
                `INSERT INTO wh_perspective_versions (perspective_name, base_name, version, state, event_types, retire_after)
                 VALUES ('legacy', 'legacy', 1, 'retiring', '{}', now() - interval '1 second')`
              ),
              Fixtures.deposit(id, 3)
            )
          )
        }).pipe(Effect.provide(app(url, { tenants: { serve: [] } })))

        const tenants = yield* Tenants.Tenants
        const client = yield* PgClient.PgClient
        const schema = tenants.catalog.schemaOf("acme")
        const seen = Effect.map(
          client.query<{ state: string; total: number | null }>(
            `SELECT (SELECT state FROM ${schema}.wh_perspective_versions WHERE perspective_name = 'legacy') AS state,
                    (SELECT (data->>'total')::int FROM ${schema}.wh_per_balance WHERE id = $1) AS total`,
            [id]
          ),
          (rows) => rows[0]!
        )
        const done = yield* Effect.repeat(seen, {
          until: (r) => r.state === "retired" && r.total === 3,
          times: 200,
          schedule: Schedule.spaced(Duration.millis(50))
        })
        expect(done).toEqual({ state: "retired", total: 3 })
      }).pipe(Effect.provide(app(url)))
    )
  )

  it.live(
    "a tenant woken with nothing to do (another process drained it) is let go when its worker finds nothing, not at the next idleCheck",
    () =>
      withDatabase((url) =>
        Effect.gen(function* () {
          const tenants = yield* Tenants.Tenants
          yield* tenants.catalog.add("acme")
          const held = Effect.map(tenants.status, (s) => s.held)
          yield* Effect.repeat(held, { until: (h) => h.length === 0, times: 200, schedule: Schedule.spaced(Duration.millis(50)) })
          // What an append's wake-up looks like when another process applied the work before this one looked.
          yield* Effect.flatMap(PgClient.PgClient, (client) =>
            client.query("SELECT pg_notify('wh_work', $1)", [tenants.catalog.schemaOf("acme")])
          )
          const seen = yield* Effect.repeat(held, {
            until: (h) => h.includes("acme"),
            times: 400,
            schedule: Schedule.spaced(Duration.millis(5))
          })
          expect(seen).toEqual(["acme"])
          // idleCheck is an hour: only the worker's own word lets the tenant go.
          const after = yield* Effect.repeat(held, {
            until: (h) => h.length === 0,
            times: 100,
            schedule: Schedule.spaced(Duration.millis(50))
          })
          expect(after).toEqual([])
        }).pipe(Effect.provide(app(url, { tenants: { idleCheck: Duration.hours(1), idleTimeToLive: Duration.millis(200) } })))
      )
  )

  it.live("receptors run for their tenant: Tenants.current inside a receptor names the tenant whose event it handles", () => {
    const seen: Array<readonly [string, string]> = []
    const receptor = Receptor.make({
      name: "who-am-i",
      handles: [Fixtures.Deposited],
      stage: "PostPerspective",
      perspective: "balance",
      handle: (e) =>
        Effect.flatMap(Effect.orDie(Tenants.current("receptor")), (tenant) =>
          Effect.sync(() => void seen.push([tenant, e.payload.accountId]))
        )
    })
    return withDatabase((url) =>
      Effect.gen(function* () {
        const { catalog } = yield* Tenants.Tenants
        yield* catalog.add("acme")
        yield* catalog.add("globex")
        const a = EventId.unsafeMake()
        const g = EventId.unsafeMake()
        expect(yield* depositAndRead("acme", a, 1)).toBe(1)
        expect(yield* depositAndRead("globex", g, 2)).toBe(2)
        yield* Effect.repeat(
          Effect.sync(() => seen.length),
          { until: (n) => n >= 2, times: 200, schedule: Schedule.spaced(Duration.millis(50)) }
        )
        expect([...seen].sort()).toEqual([
          ["acme", a],
          ["globex", g]
        ])
      }).pipe(Effect.provide(app(url, { receptors: [receptor] })))
    )
  })

  it.live("fair: a quiet tenant's event is applied while another tenant still works through a backlog of 120,000 events", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        // The backlog is written by a process that only writes (serve: []), then a serving process starts on it.
        yield* busyAndQuiet(url, 1_500)
        yield* Effect.gen(function* () {
          const id = EventId.unsafeMake()
          expect(yield* depositAndRead("quiet", id, 3)).toBe(3)
          // The quiet tenant was served while the busy one still had work: it did not wait behind the backlog.
          const [left] = yield* Tenants.run("busy", Fixtures.sql<{ n: number }>("SELECT count(*)::int AS n FROM wh_perspective_events"))
          expect(left!.n).toBeGreaterThan(0)
        }).pipe(Effect.provide(app(url)))
      })
    )
  )

  it.live(
    "one statement at a time: while a quiet tenant appends, a tenant working through a backlog has at most one statement in flight per pool",
    () =>
      withDatabase((url) =>
        Effect.gen(function* () {
          yield* busyAndQuiet(url)
          // Its own pool: the sampler's statements take no place of the app's.
          const sampler = yield* PgClient.make({ url, maxConnections: 1 })
          const busyInFlight = sampler
            .query<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%tenant_busy%'"
            )
            .pipe(Effect.map(([row]) => row!.n))
          yield* Effect.gen(function* () {
            const quiet = EventId.unsafeMake()
            // The quiet tenant has a statement every few milliseconds throughout.
            yield* Effect.forkChild(Effect.forever(depositAndRead("quiet", quiet, 1)))
            const left = sampler
              .query<{ n: number }>("SELECT count(*)::int AS n FROM tenant_busy.wh_perspective_events")
              .pipe(Effect.map(([row]) => row!.n))
            // Samples until the busy tenant's backlog is applied (its worker's pool and the app's pool each carry its
            // statements; without the rule its consumers ran up to four at once on the worker's pool).
            const seen: Array<number> = []
            while (seen.length < 20_000 && (seen.length % 50 !== 0 || (yield* left) > 0)) {
              seen.push(yield* busyInFlight)
              yield* Effect.sleep(Duration.millis(1))
            }
            expect(yield* left).toBe(0)
            expect(seen.filter((n) => n > 0).length).toBeGreaterThan(20)
            expect(Math.max(...seen)).toBeLessThanOrEqual(2)
          }).pipe(Effect.provide(app(url)))
        }).pipe(Effect.scoped)
      )
  )

  it.live(
    "a backlog that came after a tenant's queue was last analyzed: the fleet analyzes it before the worker claims; not with queueVacuum: false",
    () =>
      withDatabase((url) =>
        Effect.gen(function* () {
          // 10 streams x 300 events each (6,000 work rows): fewer streams than a claim takes, so the worker's own upkeep
          // (after a claim that took as many streams as it asked for) never analyzes; only the fleet can.
          yield* Effect.gen(function* () {
            const { catalog } = yield* Tenants.Tenants
            for (const id of ["fresh", "left"]) {
              yield* catalog.add(id)
              yield* Tenants.run(id, backlog(10, 300))
            }
          }).pipe(Effect.provide(app(url, { tenants: { serve: [] } })))
          const sampler = yield* PgClient.make({ url, maxConnections: 1 })
          const one = (sql: string) => Effect.map(sampler.query<{ n: number }>(sql), ([row]) => row!.n)
          const analyzes = (schema: string) =>
            one(
              `SELECT analyze_count::int AS n FROM pg_stat_user_tables WHERE schemaname = '${schema}' AND relname = 'wh_perspective_events'`
            )
          const drained = (schema: string) =>
            one(`SELECT count(*)::int AS n FROM ${schema}.wh_perspective_events`).pipe(
              Effect.filterOrFail((n) => n === 0),
              Effect.retry({ times: 600, schedule: Schedule.spaced(Duration.millis(50)) })
            )
          expect(yield* analyzes("tenant_fresh")).toBe(0)
          yield* drained("tenant_fresh").pipe(Effect.provide(app(url, { tenants: { serve: ["fresh"] } })))
          expect(yield* analyzes("tenant_fresh")).toBe(1)
          yield* drained("tenant_left").pipe(Effect.provide(app(url, { queueVacuum: false, tenants: { serve: ["left"] } })))
          expect(yield* analyzes("tenant_left")).toBe(0)
        }).pipe(Effect.scoped)
      )
  )

  it.live("bounded: with tenants.maxActive 2, six tenants with work are served two at a time, each to its fold", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const ids = ["t1", "t2", "t3", "t4", "t5", "t6"]
        const accounts = new Map(ids.map((id) => [id, EventId.unsafeMake()]))
        // Written by a process that only writes, then one serving process with two slots starts on all six.
        yield* Effect.gen(function* () {
          const { catalog } = yield* Tenants.Tenants
          for (const id of ids) yield* catalog.add(id)
          yield* Effect.forEach(
            ids,
            (id) =>
              Tenants.run(
                id,
                Effect.forEach([1, 2, 3, 4], (amount) => Fixtures.deposit(accounts.get(id)!, amount), { discard: true })
              ),
            { discard: true }
          )
        }).pipe(Effect.provide(app(url, { tenants: { serve: [] } })))
        const totals = yield* Effect.gen(function* () {
          const tenants = yield* Tenants.Tenants
          const client = yield* PgClient.PgClient
          let peak = 0
          const read = Effect.forEach(ids, (id) =>
            Effect.map(
              client.query<{ total: number }>(`SELECT (data->>'total')::int AS total FROM tenant_${id}.wh_per_balance WHERE id = $1`, [
                accounts.get(id)!
              ]),
              (rows) => rows[0]?.total ?? 0
            )
          )
          return yield* Effect.repeat(
            Effect.andThen(
              Effect.tap(tenants.active, (active) => Effect.sync(() => (peak = Math.max(peak, active.length)))),
              read
            ),
            { until: (totals) => totals.every((t) => t === 10), times: 400, schedule: Schedule.spaced(Duration.millis(25)) }
          ).pipe(Effect.tap(() => Effect.sync(() => expect(peak).toBeLessThanOrEqual(2))))
        }).pipe(
          Effect.provide(app(url, { tenants: { maxActive: 2, idleCheck: Duration.millis(100), idleTimeToLive: Duration.millis(200) } }))
        )
        expect(totals).toEqual([10, 10, 10, 10, 10, 10])
      })
    )
  )

  it.live("one slot, idleCheck 60 s: a deploy adding a perspective hands each tenant's slot on once its work is applied", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const ids = ["f1", "f2", "f3", "f4"]
        const accounts = new Map(ids.map((id) => [id, EventId.unsafeMake()]))
        yield* Effect.gen(function* () {
          const { catalog } = yield* Tenants.Tenants
          for (const id of ids) yield* catalog.add(id)
          for (const id of ids) yield* Tenants.run(id, Fixtures.deposit(accounts.get(id)!, 2))
        }).pipe(Effect.provide(app(url, { tenants: { serve: [] } })))
        // The next deploy adds a perspective: its first start in each tenant registers it (its history planned), which
        // notifies every process, this one too. Had that notification kept the tenant held until its next check, the
        // four would take three minutes.
        const deposits = Perspective.make({
          name: "deposits",
          events: [Fixtures.Deposited],
          model: Schema.Struct({ count: Schema.Number }),
          initial: { count: 0 },
          apply: { Deposited: (m) => ({ count: m.count + 1 }) }
        })
        const counts = yield* Effect.gen(function* () {
          const client = yield* PgClient.PgClient
          // Its table is laid out by the first start: none yet reads as 0.
          const read = Effect.forEach(ids, (id) =>
            Effect.match(
              client.query<{ count: number }>(`SELECT (data->>'count')::int AS count FROM tenant_${id}.wh_per_deposits WHERE id = $1`, [
                accounts.get(id)!
              ]),
              { onFailure: () => 0, onSuccess: (rows) => rows[0]?.count ?? 0 }
            )
          )
          return yield* Effect.repeat(read, {
            until: (counts) => counts.every((n) => n === 1),
            times: 1200,
            schedule: Schedule.spaced(Duration.millis(25))
          })
        }).pipe(
          Effect.provide(
            Layer.unwrap(
              Effect.map(Fixtures.definitions, ({ perspectives }) =>
                app(url, {
                  perspectives: [...perspectives, deposits],
                  tenants: {
                    maxActive: 1,
                    idleCheck: Duration.seconds(60),
                    idleTimeToLive: Duration.millis(200),
                    timeSlice: Duration.seconds(60)
                  }
                })
              )
            )
          )
        )
        expect(counts).toEqual([1, 1, 1, 1])
      })
    )
  )

  it.live("time slices: with one slot (maxActive 1), a quiet tenant is served while another still works through 120,000 events", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        yield* busyAndQuiet(url, 1_500)
        yield* Effect.gen(function* () {
          const client = yield* PgClient.PgClient
          const id = EventId.unsafeMake()
          // Appended by the process that only writes: only the serving one's fleet, with its one slot, applies it.
          yield* Tenants.run("quiet", Fixtures.deposit(id, 3)).pipe(Effect.provide(app(url, { tenants: { serve: [] } })))
          const total = yield* Effect.repeat(
            Effect.map(
              client.query<{ total: number }>("SELECT (data->>'total')::int AS total FROM tenant_quiet.wh_per_balance WHERE id = $1", [id]),
              (rows) => rows[0]?.total ?? 0
            ),
            { until: (t) => t === 3, times: 600, schedule: Schedule.spaced(Duration.millis(25)) }
          )
          expect(total).toBe(3)
          yield* busyStillWorking
        }).pipe(Effect.provide(oneSlot(url, Duration.millis(300))))
      })
    )
  )

  it.live("two processes: a tenant another process serves waits at the back while tenants nobody serves get the one slot", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        yield* busyAndQuiet(url)
        const quiet = ["quiet", "q2", "q3", "q4", "q5"]
        const accounts = new Map(quiet.map((id) => [id, EventId.unsafeMake()]))
        yield* Effect.gen(function* () {
          const { catalog } = yield* Tenants.Tenants
          for (const id of quiet.slice(1)) yield* catalog.add(id)
          for (const id of quiet) yield* Tenants.run(id, Fixtures.deposit(accounts.get(id)!, 3))
        }).pipe(Effect.provide(app(url, { tenants: { serve: [] } })))
        // Process A serves "busy" alone and works through its 40,000 events.
        yield* Effect.gen(function* () {
          const a = yield* Tenants.Tenants
          yield* Effect.repeat(a.status, {
            until: (s) => s.held.includes("busy"),
            times: 400,
            schedule: Schedule.spaced(Duration.millis(25))
          })
          // ... and serves it: its services registered in the tenant (before, the hold may still be analyzing the
          // tenant's queue, and B would see nobody serving it).
          const client = yield* PgClient.PgClient
          yield* Effect.repeat(client.query<{ n: number }>("SELECT count(*)::int AS n FROM tenant_busy.wh_service_instances"), {
            until: ([row]) => row!.n > 0,
            times: 400,
            schedule: Schedule.spaced(Duration.millis(25))
          })
          // Process B has one slot and a time slice longer than the test: had it taken "busy" (its turn may come first),
          // the quiet tenants would have waited behind it.
          yield* Effect.gen(function* () {
            const client = yield* PgClient.PgClient
            const read = Effect.forEach(quiet, (id) =>
              Effect.map(
                client.query<{ total: number }>(`SELECT (data->>'total')::int AS total FROM tenant_${id}.wh_per_balance WHERE id = $1`, [
                  accounts.get(id)!
                ]),
                (rows) => rows[0]?.total ?? 0
              )
            )
            const totals = yield* Effect.repeat(read, {
              until: (totals) => totals.every((t) => t === 3),
              times: 600,
              schedule: Schedule.spaced(Duration.millis(25))
            })
            expect(totals).toEqual([3, 3, 3, 3, 3])
            yield* busyStillWorking
          }).pipe(Effect.provide(oneSlot(url, Duration.seconds(60))))
        }).pipe(
          // A works through the backlog in small cycles (one stream of 10 events at a time), so it lasts well past the
          // quiet tenants' turns in B whatever the machine.
          Effect.provide(
            app(url, {
              options: {
                ...Fixtures.fast,
                maxStreamsPerBatch: 1,
                maxConcurrentDrainConsumers: 1,
                perspectiveBatchSize: 10,
                drainLoopMaxIterations: 1
              },
              tenants: { serve: ["busy"], maxActive: 1 }
            })
          )
        )
      })
    )
  )

  it.live("a tenant whose services fail to start is named by status until they start; then its work is applied", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const id = EventId.unsafeMake()
        // Written by a process that only writes; then the view its read models are served through is replaced by a
        // sequence, so its services cannot start (VersionTableConflict).
        yield* Effect.gen(function* () {
          const { catalog } = yield* Tenants.Tenants
          yield* catalog.add("broken")
          yield* catalog.add("fine")
          yield* Tenants.run("broken", Fixtures.deposit(id, 5))
          const client = yield* PgClient.PgClient
          yield* client.query("DROP VIEW tenant_broken.wh_per_balance; CREATE SEQUENCE tenant_broken.wh_per_balance")
        }).pipe(Effect.provide(app(url, { tenants: { serve: [] } })))
        yield* Effect.gen(function* () {
          const tenants = yield* Tenants.Tenants
          const client = yield* PgClient.PgClient
          const status = yield* Effect.repeat(tenants.status, {
            until: (s) => s.failing.some((f) => f.tenantId === "broken" && f.attempts >= 2),
            times: 400,
            schedule: Schedule.spaced(Duration.millis(25))
          })
          const broken = status.failing.find((f) => f.tenantId === "broken")!
          expect(broken.error).toContain("neither a table nor a view")
          expect(status.failing.map((f) => f.tenantId)).toEqual(["broken"])
          // Another tenant is served meanwhile.
          expect(yield* depositAndRead("fine", EventId.unsafeMake(), 2)).toBe(2)
          const pending = yield* client.query<{ n: number }>("SELECT count(*)::int AS n FROM tenant_broken.wh_perspective_events")
          expect(pending[0]!.n).toBeGreaterThan(0)
          // Fixed: the next attempt starts its services and applies the work.
          yield* client.query("DROP SEQUENCE tenant_broken.wh_per_balance")
          const total = yield* Effect.repeat(
            Effect.map(
              client.query<{ total: number }>("SELECT (data->>'total')::int AS total FROM tenant_broken.wh_per_balance__v1 WHERE id = $1", [
                id
              ]),
              (rows) => rows[0]?.total ?? 0
            ),
            { until: (t) => t === 5, times: 400, schedule: Schedule.spaced(Duration.millis(25)) }
          )
          expect(total).toBe(5)
          expect((yield* tenants.status).failing).toEqual([])
        }).pipe(Effect.provide(app(url)))
      })
    )
  )

  it.effect("tenants.maxActive and tenants.timeSlice are checked before anything connects", () =>
    Effect.gen(function* () {
      const bad = (tenants: Whizbang.TenantsConfig) =>
        Effect.flip(Effect.scoped(Layer.build(app("postgres://nobody@127.0.0.1:1/none", { tenants }))))
      expect((yield* bad({ maxActive: 0 })).message).toContain("tenants.maxActive must be a positive integer, got 0")
      expect((yield* bad({ timeSlice: "-1 seconds" as Duration.Input })).message).toContain("tenants.timeSlice")
    })
  )
})
