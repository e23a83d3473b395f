import { describe, expect, layer } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import pg from "pg"
import { inject } from "vitest"
import * as TestDatabase from "../src/TestDatabase.js"

const queryOne = (url: string, sql: string, params: Array<unknown> = []) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      return (await client.query(sql, params)).rows[0] as Record<string, unknown>
    } finally {
      await client.end()
    }
  })

describe("TestDatabase", () => {
  layer(TestDatabase.layer)((it) => {
    it.effect("gives the file its own fresh, empty database", () =>
      Effect.gen(function* () {
        const db = yield* TestDatabase.TestDatabase
        expect(db.name).toMatch(/^wb_test_[0-9a-f]{16}$/)
        const row = yield* queryOne(
          db.url,
          "select current_database() as name, (select count(*) from pg_tables where schemaname = 'public')::int as tables"
        )
        expect(row).toEqual({ name: db.name, tables: 0 })
      })
    )
  })

  layer(TestDatabase.layer)((it) => {
    it.effect("drops the database when its scope closes", () =>
      Effect.gen(function* () {
        const server = inject(TestDatabase.serverUrlKey)
        const scope = yield* Scope.make()
        const db = yield* TestDatabase.make(server).pipe(Scope.provide(scope))
        const exists = (name: string) =>
          queryOne(server, "select count(*)::int as n from pg_database where datname = $1", [name]).pipe(Effect.map((r) => r.n))
        expect(yield* exists(db.name)).toBe(1)
        yield* Scope.close(scope, Exit.void)
        expect(yield* exists(db.name)).toBe(0)
      })
    )
  })
})
