// `whizbang tenants list|add|remove|migrate` and `--tenant` on the data commands, against a fresh database per test
// (service schema `shop`, so its tenant catalog is `shop_tenants` and tenant `acme` is schema `tenant_acme`).
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { PgClient, PgPerspectiveVersions } from "@whizbang/postgres"
import { PgTestDatabase, TestDatabase } from "@whizbang/testing"
import { Effect } from "effect"
import { cli } from "./fixtures/runCli.js"
import { runInProcess } from "./fixtures/runInProcess.js"

const database = PgTestDatabase.layer({ schema: "shop", maxConnections: 4 })

/** A statement on `schema` (default: the service schema). */
const sql = (text: string, params: ReadonlyArray<unknown> = [], schema?: string) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (c) =>
    (schema === undefined ? c : c.forSchema(schema)).query<Record<string, any>>(text, params)
  )

/** The CLI in this process against the test database. */
const run = (...args: ReadonlyArray<string>) =>
  Effect.flatMap(Effect.service(TestDatabase.TestDatabase), ({ url }) => runInProcess(["--database-url", url, "--schema", "shop", ...args]))

/** An event and its pending work row for `perspective`, both `ageSeconds` old, in `schema`. */
const pending = (schema: string, perspective: string, ageSeconds: number, streamId: string = randomUUID(), version = 1) =>
  Effect.gen(function* () {
    const [event] = yield* sql(
      `insert into wh_events (event_id, stream_id, stream_version, event_type, payload, created_at)
       values (gen_random_uuid(), $1, $2, 'Deposited', '{"amount": 1}', now() - make_interval(secs => $3)) returning event_id`,
      [streamId, version, ageSeconds],
      schema
    )
    yield* sql(
      `insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, created_at)
       values (gen_random_uuid(), $1, $2, $3, 0, now() - make_interval(secs => $4))`,
      [streamId, perspective, event!.event_id, ageSeconds],
      schema
    )
    return streamId
  })

const deadLetter = (schema: string, perspective: string) =>
  sql(
    `insert into wh_dead_letters (work_id, stream_id, perspective_name, event_id, event_type, payload, error, attempts)
     values (gen_random_uuid(), gen_random_uuid(), $1, gen_random_uuid(), 'Deposited', '{}', 'boom', 3)`,
    [perspective],
    schema
  )

const schemas = Effect.map(
  sql("select nspname from pg_namespace where nspname like 'tenant_%' or nspname like 'shop%' order by 1"),
  (rows) => rows.map((r) => r.nspname as string)
)

describe("whizbang tenants", () => {
  it.live(
    "add creates and migrates a schema; list shows each tenant's pending work, lag and dead letters, the worst first, with totals",
    () =>
      Effect.gen(function* () {
        const added = yield* run("tenants", "add", "acme", "--json")
        expect(added.code).toBe(0)
        expect(added.json()).toMatchObject({ id: "acme", schema: "tenant_acme", state: "active" })
        expect((yield* run("tenants", "add", "globex")).stdout).toMatch(/added tenant globex: schema tenant_globex created and migrated/)
        const again = yield* run("tenants", "add", "acme")
        expect(again.code).toBe(4)
        expect(again.stderr).toBe('whizbang: tenant "acme" exists already\n')

        yield* pending("tenant_acme", "balance", 300)
        yield* pending("tenant_acme", "balance", 200)
        yield* pending("tenant_globex", "balance", 20)
        yield* deadLetter("tenant_globex", "balance")
        yield* deadLetter("tenant_globex", "balance")

        const listed = yield* run("tenants", "list", "--json")
        expect(listed.code).toBe(0)
        const overview = listed.json()
        expect(overview).toMatchObject({ tenants: 3, active: 3, inTransition: 0, unreadable: 0, statements: 1 })
        expect(overview.totals).toMatchObject({ pending: 3, deadLetters: 2, lagging: 2 })
        expect(overview.totals.maxLagSeconds).toBeGreaterThan(290)
        expect(overview.shown.map((t: any) => [t.id, t.schema, t.pending, t.deadLetters])).toEqual([
          ["acme", "tenant_acme", 2, 0],
          ["globex", "tenant_globex", 1, 2],
          ["default", "shop", 0, 0]
        ])
        expect(overview.shown[0].lagSeconds).toBeGreaterThan(290)
        expect(overview.shown[1].lagSeconds).toBeGreaterThan(15)
        expect(overview.shown[1].lagSeconds).toBeLessThan(200)
        expect(overview.shown[2].lagSeconds).toBeNull()
        expect(overview.shown[0].migratedAt).not.toBeNull()

        const top = yield* run("tenants", "list", "--top", "1")
        expect(top.code).toBe(0)
        expect(top.stdout).toMatch(/TENANT\s+SCHEMA\s+STATE\s+CREATED\s+MIGRATED\s+PENDING\s+LAG\s+DEAD LETTERS/)
        expect(top.stdout).toMatch(/acme\s+tenant_acme\s+active\s+\S+ \S+\s+\S+ \S+\s+2\s+5m \d+s\s+0/)
        expect(top.stdout).not.toMatch(/globex/)
        expect(top.stdout).toMatch(/the worst 1 of 3 by lag/)
        expect(top.stdout).toMatch(/TOTAL 3 tenant\(s\) \(3 active\): 3 pending in 2 tenant\(s\), max lag 5m \d+s, 2 dead letter\(s\)/)

        // A tenant whose schema lost a table is listed as unreadable, first; the others are still read.
        yield* sql("alter table tenant_globex.wh_dead_letters rename to wh_dead_letters_away")
        const broken = (yield* run("tenants", "list", "--json")).json()
        expect(broken.unreadable).toBe(1)
        expect(broken.shown[0]).toMatchObject({ id: "globex", pending: null })
        expect(broken.shown[0].error).toMatch(/wh_dead_letters/)
        expect(broken.shown[1]).toMatchObject({ id: "acme", pending: 2 })
        yield* sql("alter table tenant_globex.wh_dead_letters_away rename to wh_dead_letters")

        const wrongFlag = yield* run("tenants", "list", "--tenant", "acme")
        expect(wrongFlag.code).toBe(2)
        expect(wrongFlag.stderr).toMatch(/--tenant does not apply to whizbang tenants/)
      }).pipe(Effect.provide(database)),
    60_000
  )

  it.live(
    "remove asks for the id typed again: refused without a terminal, with a wrong --confirm and for the default tenant; --confirm <id> or --yes drops the schema",
    () =>
      Effect.gen(function* () {
        yield* run("tenants", "add", "acme")
        yield* run("tenants", "add", "globex")
        yield* pending("tenant_acme", "balance", 10)

        const noTerminal = yield* run("tenants", "remove", "acme")
        expect(noTerminal.code).toBe(4)
        expect(noTerminal.stderr).toMatch(
          /remove tenant "acme": drops schema tenant_acme with every event and read model in it — refusing without a terminal to confirm on; pass --confirm acme/
        )
        const wrong = yield* run("tenants", "remove", "acme", "--confirm", "globex")
        expect(wrong.code).toBe(4)
        expect(wrong.stderr).toMatch(/not confirmed \("globex" is not "acme"\); nothing changed/)
        const defaultTenant = yield* run("tenants", "remove", "default", "--yes")
        expect(defaultTenant.code).toBe(4)
        expect(defaultTenant.stderr).toMatch(/the default tenant holds the service's own schema and cannot be removed/)
        const unknown = yield* run("tenants", "remove", "initech", "--yes")
        expect(unknown.code).toBe(3)
        expect(unknown.stderr).toMatch(/unknown tenant "initech"/)
        const hostile = yield* run("tenants", "remove", 'a"; drop schema shop cascade; --', "--yes")
        expect(hostile.code).toBe(2)
        expect(yield* schemas).toEqual(["shop", "shop_tenants", "tenant_acme", "tenant_globex"])
        expect((yield* sql("select count(*)::int as n from tenant_acme.wh_events"))[0]!.n).toBe(1)

        const removed = yield* run("tenants", "remove", "acme", "--confirm", "acme", "--json")
        expect(removed.code).toBe(0)
        expect(removed.json()).toEqual({ id: "acme", schema: "tenant_acme", removed: true })
        expect((yield* run("tenants", "remove", "globex", "--yes")).stdout).toBe("removed tenant globex: schema tenant_globex dropped\n")
        expect(yield* schemas).toEqual(["shop", "shop_tenants"])
        expect((yield* run("tenants", "list", "--json")).json().shown.map((t: any) => t.id)).toEqual(["default"])
      }).pipe(Effect.provide(database)),
    60_000
  )

  it.live(
    "migrate migrates every tenant with progress, names a tenant whose migration fails (exit 1) after migrating the others, and resumes",
    () =>
      Effect.gen(function* () {
        for (const id of ["a1", "a2", "a3"]) expect((yield* run("tenants", "add", id)).code).toBe(0)
        const current = yield* run("tenants", "migrate")
        expect(current.code).toBe(0)
        expect(current.stdout).toBe("4 tenant(s) at this release's migrations: 0 migrated now, 4 already current\n")
        expect(current.stderr.trim().split("\n")).toHaveLength(4)
        expect(current.stderr).toMatch(/^migrated 4\/4 \(last: \w+\)$/m)

        // a1 and a3 miss the last migration (its column dropped, its record deleted); a2's record is deleted with
        // its column left in place, so re-applying it fails there.
        const last = "0018_history_replay"
        for (const schema of ["tenant_a1", "tenant_a3"]) {
          yield* sql(`alter table ${schema}.wh_perspective_versions drop column replay_started_at`)
          yield* sql(`delete from ${schema}.wh_migrations where tag = $1`, [last])
        }
        yield* sql("delete from tenant_a2.wh_migrations where tag = $1", [last])

        const failed = yield* run("tenants", "migrate", "--concurrency", "1")
        expect(failed.code).toBe(1)
        expect(failed.stderr).toMatch(/migrated 4\/4/)
        expect(failed.stderr).toMatch(
          /whizbang: database: 1 of 4 tenant\(s\) failed to migrate \(a2: .*replay_started_at.*\); the others are migrated/
        )
        const columns = yield* sql("select table_schema from information_schema.columns where column_name = 'replay_started_at' order by 1")
        expect(columns.map((r) => r.table_schema)).toEqual(["shop", "tenant_a1", "tenant_a2", "tenant_a3"])

        // Fixed, run again: only a2 has anything to apply.
        yield* sql("alter table tenant_a2.wh_perspective_versions drop column replay_started_at")
        const resumed = yield* run("tenants", "migrate", "--json")
        expect(resumed.code).toBe(0)
        expect(resumed.json()).toEqual({ tenants: 4, migrated: ["a2"], failed: [] })
        expect(resumed.stderr).toBe("")
      }).pipe(Effect.provide(database)),
    60_000
  )
  it.live(
    "move is refused on plain PostgreSQL (exit 4, nothing changed), a malformed --to is invalid input (exit 2), an unknown tenant not found (exit 3)",
    () =>
      Effect.gen(function* () {
        expect((yield* run("tenants", "add", "acme")).code).toBe(0)
        const plain = yield* run("tenants", "move", "acme", "--to", "127.0.0.1:5702")
        expect(plain.code).toBe(4)
        expect(plain.stderr).toMatch(/tenant "acme" cannot be moved: the database is not a Citus cluster/)
        const service = yield* run("tenants", "move", "default", "--to", "127.0.0.1:5702")
        expect(service.code).toBe(4)
        const malformed = yield* run("tenants", "move", "acme", "--to", "worker-2")
        expect(malformed.code).toBe(2)
        expect(malformed.stderr).toMatch(/--to must be host:port of a worker node \(got "worker-2"\)/)
        expect((yield* run("tenants", "move", "acme", "--to", "h:70000")).code).toBe(2)
        const unknown = yield* run("tenants", "move", "nobody", "--to", "127.0.0.1:5702")
        expect(unknown.code).toBe(3)
        expect(yield* schemas).toEqual(["shop", "shop_tenants", "tenant_acme"])
      }).pipe(Effect.provide(database)),
    60_000
  )
})

describe("--tenant", () => {
  const balance: PgPerspectiveVersions.Declared = { name: "balance", baseName: "balance", version: 1, eventTypes: ["Deposited"] }
  const registerIn = (schema: string) =>
    Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
      Effect.provideService(PgPerspectiveVersions.register([balance]), PgClient.PgClient, client.forSchema(schema))
    )

  it.live(
    "refuses hostile ids before any SQL (not even the catalog is created), an unknown tenant is not found",
    () =>
      Effect.gen(function* () {
        const hostile = ['a"; drop schema shop cascade; --', "pg_x", "x".repeat(64), "tenant_acme", "Acme", "ünicode", ""]
        for (const id of hostile) {
          for (const args of [["status"], ["rebuild", "balance", "--yes"], ["dead-letters", "list"]]) {
            const result = yield* run(...args, "--tenant", id)
            expect(result.code, `${args[0]} --tenant ${JSON.stringify(id)}`).toBe(2)
            expect(result.stderr).toMatch(/^whizbang: invalid tenant id /)
          }
          for (const args of [
            ["tenants", "add", id],
            ["tenants", "remove", id, "--yes"]
          ]) {
            const result = yield* run(...args)
            expect(result.code, `${args.join(" ")}`).toBe(2)
            expect(result.stderr).toMatch(/^whizbang: invalid tenant id /)
          }
        }
        expect(yield* schemas).toEqual(["shop"])

        const unknown = yield* run("status", "--tenant", "initech")
        expect(unknown.code).toBe(3)
        expect(unknown.stderr).toBe('whizbang: unknown tenant "initech" (see `whizbang tenants list`)\n')
        const badPrefix = yield* run("status", "--tenant", "acme", "--tenant-prefix", "pg_")
        expect(badPrefix.code).toBe(2)
        expect(badPrefix.stderr).toMatch(/--tenant-prefix/)
      }).pipe(Effect.provide(database)),
    60_000
  )

  it.live(
    "status, dead-letters and work read only the tenant's schema; rebuild touches only its schema; without --tenant the service schema",
    () =>
      Effect.gen(function* () {
        yield* run("tenants", "add", "a")
        yield* run("tenants", "add", "b")
        yield* pending("tenant_a", "balance", 600)
        yield* pending("tenant_b", "balance", 5)
        yield* pending("tenant_b", "balance", 5)
        yield* deadLetter("tenant_b", "balance")

        const statusOf = (tenant?: string) =>
          Effect.map(run("status", "--json", ...(tenant === undefined ? [] : ["--tenant", tenant])), (r) => {
            expect(r.code).toBe(0)
            const snapshot = r.json()
            return { schema: snapshot.schema, balance: snapshot.perspectives.find((p: any) => p.perspective === "balance") }
          })
        const a = yield* statusOf("a")
        expect(a.schema).toBe("tenant_a")
        expect(a.balance).toMatchObject({ pending: 1, deadLetters: 0 })
        expect(a.balance.lagSeconds).toBeGreaterThan(590)
        const b = yield* statusOf("b")
        expect(b.schema).toBe("tenant_b")
        expect(b.balance).toMatchObject({ pending: 2, deadLetters: 1 })
        expect(b.balance.lagSeconds).toBeLessThan(300)
        const service = yield* statusOf()
        expect(service).toEqual({ schema: "shop", balance: undefined })
        expect((yield* statusOf("default")).schema).toBe("shop")

        const letters = yield* run("dead-letters", "list", "--json", "--tenant", "b")
        expect(letters.json()).toHaveLength(1)
        expect((yield* run("dead-letters", "list", "--json", "--tenant", "a")).json()).toEqual([])
        const work = yield* run("work", "list", "--json", "--tenant", "a")
        expect(work.json()).toMatchObject([{ perspective: "balance", pending: 1 }])

        // The same perspective with a row and a cursor in both tenants: a rebuild of a's empties a's only.
        for (const schema of ["tenant_a", "tenant_b"]) {
          yield* registerIn(schema)
          const [stream] = yield* sql("select stream_id from wh_events limit 1", [], schema)
          yield* sql(`insert into wh_per_balance__v1 (id, data) values ($1, '{"total": 1}')`, [stream!.stream_id], schema)
          yield* sql(
            "insert into wh_perspective_cursors (stream_id, perspective_name, status) values ($1, 'balance', 2)",
            [stream!.stream_id],
            schema
          )
        }
        const count = (schema: string) =>
          Effect.map(
            sql(
              `select (select count(*)::int from wh_per_balance__v1) as rows, (select count(*)::int from wh_perspective_cursors) as cursors,
                      (select count(*)::int from wh_perspective_events) as work`,
              [],
              schema
            ),
            (rows) => rows[0]
          )
        const bBefore = yield* count("tenant_b")
        const rebuilt = yield* run("rebuild", "balance", "--tenant", "a", "--yes", "--json")
        expect(rebuilt.code).toBe(0)
        expect(rebuilt.json()).toMatchObject({ perspective: "balance", streams: 1 })
        expect((yield* count("tenant_a"))!.rows).toBe(0)
        expect(yield* count("tenant_b")).toEqual(bBefore)
        expect(bBefore).toEqual({ rows: 1, cursors: 1, work: 2 })
      }).pipe(Effect.provide(database)),
    60_000
  )

  it.live(
    "the executable runs a command for a tenant",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        yield* run("tenants", "add", "acme")
        yield* pending("tenant_acme", "balance", 60)
        const result = yield* cli(["status", "--schema", "shop", "--tenant", "acme", "--json"], { DATABASE_URL: url })
        expect(result.code).toBe(0)
        expect(result.json().schema).toBe("tenant_acme")
      }).pipe(Effect.provide(database)),
    60_000
  )
})
