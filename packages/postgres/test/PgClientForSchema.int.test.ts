import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { PgClient } from "@whizbang/postgres"
import { Effect, Exit, type Scope } from "effect"
import { type FreshDatabase, freshDatabase } from "./fixtures/freshDatabase.js"

let db: FreshDatabase
beforeAll(async () => {
  db = await freshDatabase()
})
afterAll(() => db.drop())

// One pool of 2 connections, and three schemas with a table `t` each holding its own name.
const withViews = <A, E>(f: (base: PgClient.Shape, a: PgClient.Shape, b: PgClient.Shape) => Effect.Effect<A, E, Scope.Scope>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const base = yield* PgClient.make({ url: db.url, schema: "view_base", maxConnections: 2 })
      for (const schema of ["view_base", "view_a", "view_b"]) {
        yield* base.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
        yield* base.query(`CREATE TABLE IF NOT EXISTS ${schema}.t (name text)`)
        yield* base.query(`TRUNCATE ${schema}.t`)
        yield* base.query(`INSERT INTO ${schema}.t VALUES ('${schema}')`)
      }
      return yield* f(base, base.forSchema("view_a"), base.forSchema("view_b"))
    })
  )

const name = (client: PgClient.Shape, prepared: boolean) =>
  Effect.map(client.query<{ name: string }>("SELECT name FROM t", [], { prepared }), (rows) => rows.map((r) => r.name).join())

describe("PgClient.forSchema", () => {
  it.live("views of one pool each see their own schema, statement after statement, prepared or not, however they interleave", () =>
    withViews((base, a, b) =>
      Effect.gen(function* () {
        const seen = yield* Effect.forEach(
          Array.from({ length: 60 }, (_, i) => i),
          (i) => {
            const [client, expected] = i % 3 === 0 ? [base, "view_base"] : i % 3 === 1 ? [a, "view_a"] : [b, "view_b"]
            return Effect.map(name(client, i % 2 === 0), (got) => (got === expected ? "ok" : `${expected} saw ${got}`))
          },
          { concurrency: 6 }
        )
        expect(seen.filter((s) => s !== "ok")).toEqual([])
        expect(a.schema).toBe("view_a")
        expect(a.pool).toBe(base.pool)
      })
    )
  )

  it.live("a transaction runs on its view's schema; a statement of another view inside it is a defect, and nothing of it commits", () =>
    withViews((_base, a, b) =>
      Effect.gen(function* () {
        yield* a.withTransaction(Effect.andThen(a.query("INSERT INTO t VALUES ('a2')"), a.query("INSERT INTO t VALUES ('a3')")))
        expect(yield* name(a, false)).toBe("view_a,a2,a3")
        const crossed = yield* Effect.exit(
          a.withTransaction(Effect.andThen(a.query("INSERT INTO t VALUES ('a4')"), b.query("INSERT INTO t VALUES ('b2')")))
        )
        expect(Exit.isFailure(crossed) && Exit.hasDies(crossed)).toBe(true)
        expect(yield* name(a, false)).toBe("view_a,a2,a3")
        expect(yield* name(b, false)).toBe("view_b")
      })
    )
  )

  it.live("Whizbang's statements (qualified) run for their view's schema on a connection left on any other, without moving it there", () =>
    Effect.scoped(
      Effect.gen(function* () {
        // One connection: every view's statements land on it.
        const base = yield* PgClient.make({ url: db.url, schema: "view_base", maxConnections: 1 })
        for (const schema of ["view_base", "view_a", "view_b"]) {
          yield* base.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
          yield* base.query(`DROP TABLE IF EXISTS ${schema}.wh_t`)
          yield* base.query(`CREATE TABLE ${schema}.wh_t (name text)`)
          yield* base.query(`INSERT INTO ${schema}.wh_t VALUES ('${schema}')`)
        }
        // Read past the views, on the pool's one connection as it is.
        const path = Effect.promise(() => base.pool.query<{ p: string }>("SELECT current_setting('search_path') AS p")).pipe(
          Effect.map((result) => result.rows[0]!.p)
        )
        const ask = (client: PgClient.Shape, prepared: boolean) =>
          Effect.map(client.query<{ name: string }>("SELECT name FROM wh_t", [], { prepared, qualified: true }), (rows) =>
            rows.map((r) => r.name).join()
          )
        const a = base.forSchema("view_a")
        const b = base.forSchema("view_b")
        // Unqualified, a view moves the connection (one SET); qualified ones then leave it where it is.
        expect(yield* Effect.map(b.query<{ name: string }>("SELECT current_schema() AS name"), (rows) => rows[0]!.name)).toBe("view_b")
        const seen = yield* Effect.forEach(
          Array.from({ length: 11 }, (_, i) => i),
          (i) => ask(i % 2 === 0 ? a : b, i % 3 === 0)
        )
        expect(seen).toEqual(Array.from({ length: 11 }, (_, i) => (i % 2 === 0 ? "view_a" : "view_b")))
        // The one connection is still where the unqualified statement of view_b left it.
        expect(yield* path).toBe("view_b")
        // The client's own schema runs them as written (a single-schema service's statements are unchanged): moved.
        expect(yield* ask(base, false)).toBe("view_base")
        expect(yield* path).toBe("view_base")
      })
    )
  )

  it.live("every view's `dedicated` is one pool shared by all views, each bound to its view's schema, sized by the largest request", () =>
    withViews((base, a, b) =>
      Effect.gen(function* () {
        // A tenant's replay of history (1 connection) may ask before its worker (consumers + 2): the worker's size holds.
        const da = yield* a.dedicated({ maxConnections: 2 })
        expect(da.pool.options.max).toBe(2)
        const db2 = yield* b.dedicated({ maxConnections: 3 })
        const dbase = yield* base.forSchema("view_base").dedicated({ maxConnections: 2 })
        expect(da.pool).toBe(db2.pool)
        expect(dbase.pool).toBe(da.pool)
        expect(da.pool).not.toBe(base.pool)
        expect(da.pool.options.max).toBe(3)
        expect(yield* name(da, true)).toBe("view_a")
        expect(yield* name(db2, true)).toBe("view_b")
        expect(yield* name(dbase, true)).toBe("view_base")
      })
    )
  )

  it.live(
    "a tenant's prepared statements keep their own names (and plans) per schema; a connection keeps at most 256, the 64 oldest deallocated together",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          // One connection: every view's statements land on it.
          const base = yield* PgClient.make({ url: db.url, schema: "view_base", maxConnections: 1 })
          const prepared = base.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_prepared_statements")
          const ask = (i: number) =>
            Effect.map(
              base.forSchema(`lru_${i}`).query<{ n: number }>("SELECT $1::int AS n", [i], { prepared: true }),
              (rows) => rows[0]!.n
            )
          const first = yield* Effect.forEach(
            Array.from({ length: 40 }, (_, i) => i),
            ask
          )
          expect(first).toEqual(Array.from({ length: 40 }, (_, i) => i))
          // Named per schema: one prepared statement each, the same text.
          expect((yield* prepared)[0]!.n).toBe(40)
          const all = yield* Effect.forEach(
            Array.from({ length: 256 }, (_, i) => i),
            ask
          )
          expect(all).toEqual(Array.from({ length: 256 }, (_, i) => i))
          expect((yield* prepared)[0]!.n).toBe(256)
          // Full: the next one makes room for itself and the next 63, the 64 least recently used dropped together.
          expect(yield* ask(256)).toBe(256)
          expect((yield* prepared)[0]!.n).toBe(256 - 64 + 1)
          expect(yield* Effect.forEach([257, 258], ask)).toEqual([257, 258])
          expect((yield* prepared)[0]!.n).toBe(256 - 64 + 3)
          // The first ones were deallocated: asked again, they are prepared again and answer.
          expect(yield* Effect.forEach([0, 1, 2], ask)).toEqual([0, 1, 2])
          expect((yield* prepared)[0]!.n).toBe(256 - 64 + 6)
        })
      )
  )
  it.live(
    "a tenant's prepared statement the server no longer has (dropped behind pg's back) is prepared again, and the statement answers",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const base = yield* PgClient.make({ url: db.url, schema: "view_base", maxConnections: 1 })
          const ask = (i: number) =>
            Effect.map(base.forSchema("gone_a").query<{ n: number }>("SELECT $1::int AS n", [i], { prepared: true }), (rows) => rows[0]!.n)
          expect(yield* ask(1)).toBe(1)
          // The one connection's statements dropped on the server: pg still believes the statement prepared.
          yield* base.query("DEALLOCATE ALL")
          expect(yield* ask(2)).toBe(2)
          expect(yield* ask(3)).toBe(3)
        })
      )
  )
  it.live(
    "a statement that never reached the server (it failed to parse) is dropped from a full connection without a DEALLOCATE, and the next statements answer",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const base = yield* PgClient.make({ url: db.url, schema: "view_base", maxConnections: 1 })
          const failed = yield* Effect.exit(base.forSchema("never_prepared").query("SELEC $1::int", [1], { prepared: true }))
          expect(Exit.isFailure(failed)).toBe(true)
          const ask = (i: number) =>
            Effect.map(
              base.forSchema(`after_${i}`).query<{ n: number }>("SELECT $1::int AS n", [i], { prepared: true }),
              (rows) => rows[0]!.n
            )
          // The failed one is the connection's oldest name: the 256th new schema evicts it.
          const all = yield* Effect.forEach(
            Array.from({ length: 300 }, (_, i) => i),
            ask
          )
          expect(all).toEqual(Array.from({ length: 300 }, (_, i) => i))
        })
      )
  )
})
