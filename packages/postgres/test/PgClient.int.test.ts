import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { PgClient, PostgresError } from "@whizbang/postgres"
import { Deferred, Effect, Exit, Fiber, Schedule } from "effect"
import pg from "pg"
import { PgDrizzle } from "../src/drizzle.js"
import { type FreshDatabase, freshDatabase } from "./fixtures/freshDatabase.js"

let db: FreshDatabase
beforeAll(async () => {
  db = await freshDatabase()
})
afterAll(() => db.drop())

// Every test gets its own pool (ended when the test's scope closes) bound to schema `client_test`.
const withClient = <A, E>(f: (client: PgClient.Shape) => Effect.Effect<A, E, PgClient.PgClient>) =>
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    yield* client.query("CREATE SCHEMA IF NOT EXISTS client_test")
    yield* client.query("CREATE TABLE IF NOT EXISTS t (id int PRIMARY KEY, note text)")
    return yield* f(client)
  }).pipe(Effect.provide(PgClient.layer({ url: db.url, schema: "client_test", maxConnections: 4 })))

const ids = (client: PgClient.Shape) =>
  Effect.map(client.query<{ id: number }>("SELECT id FROM t ORDER BY id"), (rows) => rows.map((r) => r.id))

const idle = (client: PgClient.Shape) => Effect.sync(() => client.pool.totalCount - client.pool.idleCount)

describe("PgClient", () => {
  it.live("binds every value as a parameter and sets search_path to the service schema", () =>
    withClient((client) =>
      Effect.gen(function* () {
        const rows = yield* client.query<{ n: number; s: string }>("SELECT $1::int + 1 AS n, $2::text AS s", [41, "'); DROP TABLE t; --"])
        expect(rows).toEqual([{ n: 42, s: "'); DROP TABLE t; --" }])
        const [path] = yield* client.query<{ search_path: string }>("SHOW search_path")
        expect(path!.search_path).toBe('"client_test"')
        expect(yield* ids(client)).toEqual([])
      })
    )
  )

  it.live("binds arrays element for element, whichever encoding a value takes", () =>
    withClient((client) =>
      Effect.gen(function* () {
        // Every kind of text an array element can hold: quotes, backslashes, braces, commas, the word NULL, an
        // empty string, JSON text, non-ASCII, and (pg's own encoding) control characters and emoji.
        const texts = ['q"uote', "back\\slash", "{brace}", "a,b", "NULL", "", '{"k":"v\\n"}', "é漢", null]
        const other = ["line\nbreak", "tab\t", "\u{1f600}", null]
        const ints = [1, -2, 3]
        const json = [JSON.stringify({ s: 'say "hi"\n', n: [1, 2] }), JSON.stringify("x\\y")]
        for (const options of [undefined, PgClient.prepared]) {
          const [row] = yield* client.query<{ t: Array<string | null>; o: Array<string | null>; n: Array<number>; j: Array<unknown> }>(
            "SELECT $1::text[] AS t, $2::text[] AS o, $3::int[] AS n, $4::jsonb[] AS j",
            [texts, other, ints, json],
            options
          )
          expect(row).toEqual({ t: texts, o: other, n: ints, j: json.map((j) => JSON.parse(j)) })
        }
      })
    )
  )

  it.live("commits on success", () =>
    withClient((client) =>
      Effect.gen(function* () {
        const result = yield* client.withTransaction(Effect.as(client.query("INSERT INTO t (id) VALUES (1), (2)"), "done"))
        expect(result).toBe("done")
        expect(yield* ids(client)).toEqual([1, 2])
        expect(yield* idle(client)).toBe(0)
      })
    )
  )

  it.live("dedicated: a pool of its own on the same schema, outside the other's transactions; a bad size is a typed error", () =>
    withClient((client) =>
      Effect.scoped(
        Effect.gen(function* () {
          const own = yield* client.dedicated({ maxConnections: 2 })
          expect(own.pool).not.toBe(client.pool)
          expect(own.pool.options.max).toBe(2)
          // The shared client's uncommitted row is not visible to the dedicated one: it never joins that transaction.
          const seen = yield* client.withTransaction(
            Effect.andThen(
              client.query("INSERT INTO t (id) VALUES (7)"),
              Effect.map(own.query<{ n: number }>("SELECT count(*)::int AS n FROM t WHERE id = 7"), (r) => r[0]!.n)
            )
          )
          expect(seen).toBe(0)
          expect((yield* own.query<{ n: number }>("SELECT count(*)::int AS n FROM t WHERE id = 7"))[0]!.n).toBe(1)
          for (const maxConnections of [0, 1.5, Number.NaN]) {
            const error = yield* Effect.flip(client.dedicated({ maxConnections }))
            expect(error._tag).toBe("PostgresConfigError")
            expect(error.option).toBe("maxConnections")
          }
        })
      )
    )
  )

  it.live("prepared statements: parsed once per connection when asked, never when turned off; a bad setting is a typed error", () =>
    Effect.gen(function* () {
      // One connection, so the statement and the look-up share the session that prepared it.
      const prepared = (preparedStatements: boolean | undefined) =>
        Effect.gen(function* () {
          const client = yield* PgClient.make({ url: db.url, schema: "client_test", maxConnections: 1, preparedStatements })
          const sql = "SELECT $1::int * 2 AS n"
          const runs = yield* Effect.forEach([1, 2, 3], (n) => client.query<{ n: number }>(sql, [n], { prepared: true }))
          expect(runs.map(([row]) => row?.n)).toEqual([2, 4, 6])
          // A statement not asked to be prepared is not, whatever the setting.
          yield* client.query("SELECT $1::int + 0 AS n", [1])
          return yield* client.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements ORDER BY statement")
        }).pipe(Effect.scoped)
      expect((yield* prepared(undefined)).map((r) => r.statement)).toEqual(["SELECT $1::int * 2 AS n"])
      expect(yield* prepared(false)).toEqual([])
      const refused = yield* Effect.flip(Effect.scoped(PgClient.make({ url: db.url, preparedStatements: "yes" as unknown as boolean })))
      expect(refused).toMatchObject({ _tag: "PostgresConfigError", option: "preparedStatements" })
      expect(refused.message).toContain('preparedStatements must be true or false, got "yes"')
    })
  )

  it.live("JIT compilation is off for the pool's sessions (and its dedicated pools) unless jit: true; a bad setting is a typed error", () =>
    Effect.gen(function* () {
      const jitOf = (jit: boolean | undefined) =>
        Effect.gen(function* () {
          const client = yield* PgClient.make({ url: db.url, schema: "client_test", maxConnections: 1, jit })
          const own = yield* client.dedicated({ maxConnections: 1 })
          const [pooled] = yield* client.query<{ jit: string }>("SHOW jit")
          const [dedicated] = yield* own.query<{ jit: string }>("SHOW jit")
          const [transaction] = yield* client.withTransaction(client.query<{ jit: string }>("SHOW jit"))
          return [pooled!.jit, dedicated!.jit, transaction!.jit]
        }).pipe(Effect.scoped)
      expect(yield* jitOf(undefined)).toEqual(["off", "off", "off"])
      expect(yield* jitOf(false)).toEqual(["off", "off", "off"])
      // true keeps the server's own setting (this database's default).
      const server = yield* Effect.promise(async () => {
        const raw = new pg.Client({ connectionString: db.url })
        await raw.connect()
        const { rows } = await raw.query<{ jit: string }>("SHOW jit")
        await raw.end()
        return rows[0]!.jit
      })
      expect(yield* jitOf(true)).toEqual([server, server, server])
      const refused = yield* Effect.flip(Effect.scoped(PgClient.make({ url: db.url, jit: "no" as unknown as boolean })))
      expect(refused).toMatchObject({ _tag: "PostgresConfigError", option: "jit" })
      expect(refused.message).toContain('jit must be true or false, got "no"')
    })
  )

  it.live("a dedicated pool with genericPlans plans a prepared statement once per connection; other pools plan as usual", () =>
    Effect.gen(function* () {
      const client = yield* PgClient.make({ url: db.url, schema: "client_test", maxConnections: 1 })
      yield* client.query("CREATE SCHEMA IF NOT EXISTS client_test")
      yield* client.query("CREATE TABLE IF NOT EXISTS t (id int PRIMARY KEY, note text)")
      const generic = yield* client.dedicated({ maxConnections: 1, genericPlans: true })
      const plain = yield* client.dedicated({ maxConnections: 1 })
      const mode = (c: PgClient.Shape) =>
        Effect.map(c.query<{ plan_cache_mode: string }>("SHOW plan_cache_mode"), ([row]) => row!.plan_cache_mode)
      expect([yield* mode(client), yield* mode(plain), yield* mode(generic)]).toEqual(["auto", "auto", "force_generic_plan"])
      // One connection each: the statement's plans are counted on the connection that ran it.
      const plans = (c: PgClient.Shape) =>
        Effect.gen(function* () {
          for (let id = 0; id < 8; id++) yield* c.query("SELECT id FROM t WHERE id = $1::int", [id], { prepared: true })
          const [row] = yield* c.query<{ generic: string; custom: string }>(
            "SELECT generic_plans::text AS generic, custom_plans::text AS custom FROM pg_prepared_statements WHERE statement LIKE 'SELECT id FROM t WHERE id = $1::int'"
          )
          return row
        })
      expect(yield* plans(generic)).toEqual({ generic: "8", custom: "0" })
      expect(Number((yield* plans(plain))!.custom)).toBeGreaterThan(0)
      const refused = yield* Effect.flip(client.dedicated({ maxConnections: 1, genericPlans: "yes" as unknown as boolean }))
      expect(refused).toMatchObject({ _tag: "PostgresConfigError", option: "genericPlans" })
      expect(refused.message).toContain('genericPlans must be true or false, got "yes"')
    }).pipe(Effect.scoped)
  )

  it.live("rolls back on failure and surfaces the effect's own error", () =>
    withClient((client) =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(
          client.withTransaction(client.query("INSERT INTO t (id) VALUES (10)").pipe(Effect.andThen(Effect.fail("nope" as const))))
        )
        expect(error).toBe("nope")
        expect(yield* ids(client)).not.toContain(10)
        const defect = yield* Effect.exit(
          client.withTransaction(client.query("INSERT INTO t (id) VALUES (11)").pipe(Effect.andThen(Effect.die("boom"))))
        )
        expect(Exit.hasDies(defect)).toBe(true)
        expect(yield* ids(client)).not.toContain(11)
        expect(yield* idle(client)).toBe(0)
      })
    )
  )

  it.live("rolls back on interruption and releases the connection", () =>
    withClient((client) =>
      Effect.gen(function* () {
        const inserted = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(
          client.withTransaction(
            client
              .query("INSERT INTO t (id) VALUES (20)")
              .pipe(Effect.andThen(Deferred.succeed(inserted, undefined)), Effect.andThen(Effect.never))
          )
        )
        yield* Deferred.await(inserted)
        yield* Fiber.interrupt(fiber)
        expect(yield* ids(client)).not.toContain(20)
        expect(yield* idle(client)).toBe(0)
      })
    )
  )

  it.live("cancels an in-flight statement on interruption (no waiting for pg_sleep)", () =>
    withClient((client) =>
      Effect.gen(function* () {
        const fiber = yield* Effect.forkChild(
          client.withTransaction(client.query("INSERT INTO t (id) VALUES (30)").pipe(Effect.andThen(client.query("SELECT pg_sleep(30)"))))
        )
        // Wait until the server is actually running the sleep (observed, not guessed).
        yield* client
          .query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query = 'SELECT pg_sleep(30)'")
          .pipe(Effect.repeat({ until: (rows) => rows[0]!.n > 0, schedule: Schedule.spaced("10 millis") }))
        const started = Date.now()
        yield* Fiber.interrupt(fiber)
        expect(Date.now() - started).toBeLessThan(5_000)
        expect(yield* ids(client)).not.toContain(30)
        expect(yield* idle(client)).toBe(0)
      })
    )
  )

  it.live("runs nested calls, forked children and accessors on the transaction's connection", () =>
    withClient((client) =>
      Effect.gen(function* () {
        const txid = PgClient.query<{ txid: string }>("SELECT txid_current()::text AS txid").pipe(Effect.map((rows) => rows[0]!.txid))
        const seen = yield* client.withTransaction(
          Effect.gen(function* () {
            const direct = yield* txid
            const viaHelper = yield* Effect.suspend(() => txid)
            const forked = yield* Effect.forkChild(txid).pipe(Effect.flatMap(Fiber.join))
            const nested = yield* client.withTransaction(txid)
            const viaDrizzle = yield* PgDrizzle.run((d) => d.execute("SELECT txid_current()::text AS txid")).pipe(
              Effect.map((r) => String(r.rows[0]!["txid"]))
            )
            return [direct, viaHelper, forked, nested, viaDrizzle]
          })
        )
        expect(new Set(seen).size).toBe(1)
        const outside = yield* txid
        expect(outside).not.toBe(seen[0])
      }).pipe(Effect.provideService(PgClient.PgClient, client))
    )
  )

  it.live("a nested transaction is a savepoint: its failure rolls back only its own work", () =>
    withClient((client) =>
      Effect.gen(function* () {
        yield* client.withTransaction(
          Effect.gen(function* () {
            yield* client.query("INSERT INTO t (id) VALUES (40)")
            const inner = yield* Effect.flip(
              client.withTransaction(
                client.query("INSERT INTO t (id) VALUES (41)").pipe(Effect.andThen(client.query("INSERT INTO t (id) VALUES (40)")))
              )
            )
            expect(inner.reason._tag).toBe("UniqueViolation")
            yield* client.withTransaction(client.query("INSERT INTO t (id) VALUES (42)"))
          })
        )
        const rows = yield* ids(client)
        expect(rows.filter((id) => id >= 40)).toEqual([40, 42])
      })
    )
  )

  it.live("classifies real failures", () =>
    withClient((client) =>
      Effect.gen(function* () {
        yield* client.query("INSERT INTO t (id) VALUES (50)")
        const unique = yield* Effect.flip(client.query("INSERT INTO t (id) VALUES ($1)", [50]))
        expect(unique.reason).toMatchObject({ _tag: "UniqueViolation", constraint: "t_pkey" })
        expect(PostgresError.isRetryable(unique)).toBe(false)
        const syntax = yield* Effect.flip(client.query("SELEC 1"))
        expect(syntax.reason._tag).toBe("SyntaxError")
        expect(syntax.sql).toBe("SELEC 1")
        const undefinedTable = yield* Effect.flip(client.query("SELECT * FROM no_such_table"))
        expect(undefinedTable.reason._tag).toBe("UndefinedTable")
        const canceled = yield* Effect.flip(
          client.withTransaction(client.query("SET LOCAL statement_timeout = 50").pipe(Effect.andThen(client.query("SELECT pg_sleep(5)"))))
        )
        expect(canceled.reason._tag).toBe("QueryCanceled")
        const viaDrizzle = yield* Effect.flip(PgDrizzle.run((d) => d.execute("SELECT * FROM no_such_table")))
        expect(viaDrizzle.reason._tag).toBe("UndefinedTable")
      }).pipe(Effect.provideService(PgClient.PgClient, client))
    )
  )

  it.live("classifies a refused connection (bad port) as a retryable ConnectionError", () =>
    Effect.gen(function* () {
      const url = new URL(db.url)
      url.port = "1"
      const client = yield* PgClient.make({ url: url.toString(), connectTimeout: "2 seconds" })
      const error = yield* Effect.flip(client.query("SELECT 1"))
      expect(error.reason).toMatchObject({ _tag: "ConnectionError", code: "ECONNREFUSED" })
      expect(PostgresError.isRetryable(error)).toBe(true)
      const inTransaction = yield* Effect.flip(client.withTransaction(client.query("SELECT 1")))
      expect(inTransaction.reason._tag).toBe("ConnectionError")
    }).pipe(Effect.scoped)
  )

  it.live("a statement waiting for a connection longer than connectTimeout fails, whichever schema's turn it waits for", () =>
    Effect.gen(function* () {
      const client = yield* PgClient.make({ url: db.url, schema: "client_test", maxConnections: 1, connectTimeout: "300 millis" })
      const held = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // The pool's one connection, held by a transaction of the service schema.
      const holder = yield* Effect.forkChild(
        client.withTransaction(Effect.andThen(Deferred.succeed(held, undefined), Deferred.await(release)))
      )
      yield* Deferred.await(held)
      const tenant = client.forSchema("client_tenant")
      const waited = yield* Effect.flip(tenant.query("SELECT 1"))
      expect(waited.message).toContain("timeout exceeded when trying to connect")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      // The place it waited for was left: the next statement gets the connection.
      expect(yield* client.query<{ one: number }>("SELECT 1 AS one")).toEqual([{ one: 1 }])
    }).pipe(Effect.scoped)
  )
})
