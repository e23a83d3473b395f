import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { PgClient, PgMigrator, PgPerspectiveVersions, SchemaReady } from "@whizbang/postgres"
import { eq } from "drizzle-orm"
import { Effect, Layer, Schedule } from "effect"
import pg from "pg"
import { PgDrizzle, Tables } from "../src/drizzle.js"
import { type FreshDatabase, freshDatabase } from "./fixtures/freshDatabase.js"

let db: FreshDatabase
beforeAll(async () => {
  db = await freshDatabase()
})
afterAll(() => db.drop())

const client = (schema: string) => PgClient.make({ url: db.url, schema, maxConnections: 3 })
const tags = PgMigrator.migrations.map((m) => m.tag)

const tablesOf = (c: PgClient.Shape, schema: string) =>
  Effect.map(
    c.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name", [
      schema
    ]),
    (rows) => rows.map((r) => r.table_name)
  )

const expectedTables = [
  "wh_active_streams",
  "wh_dead_letters",
  "wh_events",
  "wh_lifecycle_pending",
  "wh_migrations",
  "wh_perspective_backfill",
  "wh_perspective_cursors",
  "wh_perspective_events",
  "wh_perspective_snapshots",
  "wh_perspective_versions",
  "wh_service_instances"
]

describe("PgMigrator", () => {
  it.live("creates the schema and every table, and is idempotent", () =>
    Effect.gen(function* () {
      const c = yield* client("svc_once")
      const first = yield* PgMigrator.run.pipe(Effect.provideService(PgClient.PgClient, c))
      expect(first).toEqual({ schema: "svc_once", applied: tags, alreadyApplied: [] })
      expect(yield* tablesOf(c, "svc_once")).toEqual(expectedTables)
      const second = yield* PgMigrator.run.pipe(Effect.provideService(PgClient.PgClient, c))
      expect(second).toEqual({ schema: "svc_once", applied: [], alreadyApplied: tags })
      const [count] = yield* c.query<{ n: string }>("SELECT count(*) AS n FROM wh_migrations")
      expect(Number(count!.n)).toBe(tags.length)
      // Nothing leaked into the placeholder or default schemas.
      expect(yield* tablesOf(c, "__whizbang_schema__")).toEqual([])
      expect(yield* tablesOf(c, "whizbang")).toEqual([])
    }).pipe(Effect.scoped)
  )

  it.live("the append and completion functions plan their statements once per connection, whatever migration last replaced them", () =>
    Effect.gen(function* () {
      const c = yield* client("svc_plans")
      yield* PgMigrator.run.pipe(Effect.provideService(PgClient.PgClient, c))
      // The append holds its statements (0014's 16-argument one, p_wait_for_lock); since 0019 the 14- and
      // 15-argument ones of older deploys are SQL wrappers of it (so they notify without the trigger); the
      // completion's are always planned through the indexes.
      const rows = yield* c.query<{ name: string; args: number; config: ReadonlyArray<string> | null }>(
        `SELECT p.proname AS name, p.pronargs::int AS args, p.proconfig AS config FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = $1 AND p.proname IN ('wh_append_events', 'wh_complete_work') ORDER BY p.proname, p.pronargs`,
        ["svc_plans"]
      )
      expect(rows).toEqual([
        { name: "wh_append_events", args: 14, config: null },
        { name: "wh_append_events", args: 15, config: null },
        { name: "wh_append_events", args: 16, config: ["plan_cache_mode=force_generic_plan"] },
        {
          name: "wh_complete_work",
          args: 24,
          config: ["plan_cache_mode=force_generic_plan", "enable_seqscan=off", "enable_hashjoin=off", "enable_mergejoin=off"]
        }
      ])
      // Work rows carry no index on (instance_id, lease_expiry) since 0010: leases are per stream.
      const indexes = yield* c.query<{ name: string }>(
        "SELECT indexname AS name FROM pg_indexes WHERE schemaname = $1 AND tablename = 'wh_perspective_events' ORDER BY indexname",
        ["svc_plans"]
      )
      expect(indexes.map((i) => i.name)).toEqual([
        "wh_perspective_events_background_claim_idx",
        "wh_perspective_events_claim_idx",
        "wh_perspective_events_pkey",
        "wh_perspective_events_stream_perspective_event_key"
      ])
    }).pipe(Effect.scoped)
  )

  it.live("the tables every completion rewrites leave room on each page for updates in place", () =>
    Effect.gen(function* () {
      const c = yield* client("svc_room")
      yield* PgMigrator.run.pipe(Effect.provideService(PgClient.PgClient, c))
      const declared = (version: number): PgPerspectiveVersions.Declared => ({
        name: version === 1 ? "ledger" : `ledger__v${version}`,
        baseName: "ledger",
        version,
        eventTypes: ["Deposited"]
      })
      yield* PgPerspectiveVersions.register([declared(1), declared(2)]).pipe(Effect.provideService(PgClient.PgClient, c))
      // Cursors (migration 0011) and every version's model table: a packed page cannot take a row's next version, so
      // the update would also write the primary key's index and leave a dead tuple only VACUUM clears.
      const rows = yield* c.query<{ name: string; options: ReadonlyArray<string> | null }>(
        `SELECT c.relname AS name, c.reloptions AS options FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname IN ('wh_perspective_cursors', 'wh_per_ledger__v1', 'wh_per_ledger__v2')
          ORDER BY c.relname`,
        ["svc_room"]
      )
      expect(rows).toEqual([
        { name: "wh_per_ledger__v1", options: ["fillfactor=70"] },
        { name: "wh_per_ledger__v2", options: ["fillfactor=70"] },
        { name: "wh_perspective_cursors", options: ["fillfactor=70"] }
      ])
    }).pipe(Effect.scoped)
  )

  it.live("two instances migrating concurrently apply each migration exactly once", () =>
    Effect.gen(function* () {
      const [a, b] = yield* Effect.all([client("svc_race"), client("svc_race")])
      const reports = yield* Effect.all(
        [a, b].map((c) => PgMigrator.run.pipe(Effect.provideService(PgClient.PgClient, c))),
        { concurrency: "unbounded" }
      )
      expect([...reports[0]!.applied, ...reports[1]!.applied].sort()).toEqual(tags)
      expect([...reports[0]!.alreadyApplied, ...reports[1]!.alreadyApplied].sort()).toEqual(tags)
      expect(yield* tablesOf(a, "svc_race")).toEqual(expectedTables)
    }).pipe(Effect.scoped)
  )

  it.live("services in two schemas of one database do not see each other's tables", () =>
    Effect.gen(function* () {
      const a = yield* client("svc_a")
      const b = yield* client("svc_b")
      yield* PgMigrator.run.pipe(Effect.provideService(PgClient.PgClient, a))
      yield* PgMigrator.run.pipe(Effect.provideService(PgClient.PgClient, b))
      const streamId = "0190c0de-0000-7000-8000-000000000001"
      const tables = Tables.make(a.schema)
      yield* PgDrizzle.run((d) =>
        d.insert(tables.events).values({
          eventId: "0190c0de-0000-7000-8000-0000000000e1",
          streamId,
          streamVersion: 1,
          eventType: "Opened",
          payload: { n: 1 }
        })
      ).pipe(Effect.provideService(PgClient.PgClient, a))
      const inA = yield* PgDrizzle.run((d) => d.select().from(tables.events).where(eq(tables.events.streamId, streamId))).pipe(
        Effect.provideService(PgClient.PgClient, a)
      )
      expect(inA).toHaveLength(1)
      expect(inA[0]!.streamVersion).toBe(1)
      const inB = yield* b.query<{ n: string }>("SELECT count(*) AS n FROM wh_events")
      expect(inB[0]!.n).toBe("0")
      yield* a.query("CREATE TABLE only_in_a (id int)")
      const hidden = yield* Effect.flip(b.query("SELECT * FROM only_in_a"))
      expect(hidden.reason._tag).toBe("UndefinedTable")
      // Each schema keeps its own bookkeeping.
      expect((yield* b.query("SELECT * FROM wh_migrations")).length).toBe(tags.length)
    }).pipe(Effect.scoped)
  )

  it.live("an applied migration whose SQL changed fails with a MigrationError", () =>
    Effect.gen(function* () {
      const c = yield* client("svc_edited")
      yield* PgMigrator.run.pipe(Effect.provideService(PgClient.PgClient, c))
      yield* c.query("UPDATE wh_migrations SET hash = 'edited' WHERE idx = 0")
      const error = yield* Effect.flip(PgMigrator.run.pipe(Effect.provideService(PgClient.PgClient, c)))
      expect(error).toMatchObject({ _tag: "MigrationError", schema: "svc_edited", tag: tags[0] })
    }).pipe(Effect.scoped)
  )

  it.live("appends in a caller's transaction notify channel wh_work with the schema as payload, once per transaction", () =>
    Effect.gen(function* () {
      const c = yield* client("svc_notify")
      yield* PgMigrator.run.pipe(Effect.provideService(PgClient.PgClient, c))
      const received: Array<string> = []
      const listener = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const l = new pg.Client({ connectionString: db.url })
          await l.connect()
          l.on("notification", (n) => received.push(`${n.channel}:${n.payload}`))
          await l.query("LISTEN wh_work")
          return l
        }),
        (l) => Effect.promise(() => l.end())
      )
      void listener
      // The 14-argument append (an older deploy's, which always notified): since 0019 it notifies from the function.
      const row = (i: number) =>
        c.query(
          `SELECT outcome FROM wh_append_events(gen_random_uuid(), NULL, ARRAY[gen_random_uuid()], ARRAY[false], ARRAY['T'],
             ARRAY['{}'::jsonb], NULL, NULL, 'now', '{}'::jsonb, ARRAY['T'], ARRAY['p'], $1::int, ARRAY[]::text[])`,
          [i + 1]
        )
      yield* c.withTransaction(Effect.all([row(1), row(2), row(3)]))
      // A marker sent after the commit arrives after every notification of that transaction: wait for it, then
      // check the transaction sent exactly one.
      yield* c.query("SELECT pg_notify('wh_work', 'marker')")
      yield* Effect.yieldNow.pipe(
        Effect.repeat({ until: () => received.includes("wh_work:marker"), schedule: Schedule.spaced("5 millis") })
      )
      expect(received).toEqual(["wh_work:svc_notify", "wh_work:marker"])
    }).pipe(Effect.scoped)
  )
})

describe("SchemaReady", () => {
  it.live("layerVerify fails before migration; layer migrates; layerVerify then succeeds", () =>
    Effect.gen(function* () {
      const clientLayer = PgClient.layer({ url: db.url, schema: "svc_gate" })
      const verify = Effect.service(SchemaReady.SchemaReady).pipe(Effect.provide(SchemaReady.layerVerify.pipe(Layer.provide(clientLayer))))
      const notReady = yield* Effect.flip(verify)
      expect(notReady).toMatchObject({ _tag: "MigrationError", schema: "svc_gate", tag: tags[0] })
      const ready = yield* Effect.service(SchemaReady.SchemaReady).pipe(Effect.provide(SchemaReady.layer.pipe(Layer.provide(clientLayer))))
      expect(ready.report.applied).toEqual(tags)
      const verified = yield* verify
      expect(verified.schema).toBe("svc_gate")
    })
  )

  it.live("a service requiring SchemaReady is built only after the migration", () =>
    Effect.gen(function* () {
      const clientLayer = PgClient.layer({ url: db.url, schema: "svc_dependent" })
      const Dependent = Layer.effect(
        PgClient.PgClient,
        Effect.gen(function* () {
          yield* SchemaReady.SchemaReady
          const c = yield* PgClient.PgClient
          // The tables exist by the time the dependent layer is constructed.
          yield* Effect.orDie(c.query("SELECT 1 FROM wh_events LIMIT 1"))
          return c
        })
      ).pipe(Layer.provide(SchemaReady.layer), Layer.provide(clientLayer))
      const rows = yield* PgClient.query<{ n: number }>("SELECT 1 AS n").pipe(Effect.provide(Dependent))
      expect(rows).toEqual([{ n: 1 }])
    })
  )
})
