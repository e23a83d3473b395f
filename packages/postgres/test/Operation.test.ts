// Operations decode their rows (src/internal/operation.ts): what a statement returns is checked against the row
// schema, renamed to its fields, and anything else is a PostgresError whose reason, UnexpectedRow, names the
// operation. A client that records what it was asked stands in for Postgres.
import { describe, expect, it } from "@effect/vitest"
import type { PgClient } from "@whizbang/postgres"
import { Effect, Option, Schema } from "effect"
import * as Operation from "../src/internal/operation.js"

const recording = (rows: ReadonlyArray<unknown>) => {
  const calls: Array<{ sql: string; params: unknown; options: unknown }> = []
  const client = {
    query: (sql: string, params?: ReadonlyArray<unknown>, options?: unknown) => {
      calls.push({ sql, params, options })
      return Effect.succeed(rows)
    }
  } as unknown as PgClient.Shape
  return { client, calls }
}

const Letter = Schema.Struct({ id: Schema.String, attempts: Schema.Number, heldBy: Schema.NullOr(Schema.String) })

const list = Operation.findAll({
  name: "test.list",
  Row: Letter,
  columns: { heldBy: "held_by" },
  params: (r: { readonly perspectiveName: string; readonly limit: number }) => [r.perspectiveName, r.limit],
  sql: "SELECT id, attempts, held_by FROM t WHERE p = $1::text LIMIT $2::int"
})

describe("operations", () => {
  it.effect("decode every row to the row schema's fields, dropping columns the schema does not name", () =>
    Effect.gen(function* () {
      const { client, calls } = recording([
        { id: "a", attempts: 3, held_by: null, extra: 1 },
        { id: "b", attempts: 0, held_by: "i" }
      ])
      const rows = yield* list(client, { perspectiveName: "balance", limit: 10 })
      expect(rows).toStrictEqual([
        { id: "a", attempts: 3, heldBy: null },
        { id: "b", attempts: 0, heldBy: "i" }
      ])
      expect(calls).toEqual([{ sql: list.sql, params: ["balance", 10], options: { qualified: true } }])
    })
  )

  it.effect("a row of another shape is a PostgresError with reason UnexpectedRow naming the operation", () =>
    Effect.gen(function* () {
      const { client } = recording([{ id: "a", attempts: "3", held_by: null }])
      const error = yield* Effect.flip(list(client, { perspectiveName: "balance", limit: 10 }))
      expect(error._tag).toBe("PostgresError")
      expect(error.reason._tag).toBe("UnexpectedRow")
      expect(error.reason).toMatchObject({ operation: "test.list" })
      expect(error.message).toMatch(/^operation test\.list: unexpected row: /)
      expect(error.message).toContain("attempts")
      expect(error.sql).toBe(list.sql)
    })
  )

  it.effect("a missing column is UnexpectedRow too, named by the column the statement should return", () =>
    Effect.gen(function* () {
      const { client } = recording([{ id: "a", attempts: 3, heldBy: null }])
      const error = yield* Effect.flip(list(client, { perspectiveName: "balance", limit: 10 }))
      expect(error.reason).toMatchObject({ _tag: "UnexpectedRow", operation: "test.list" })
      expect(error.message).toContain("held_by")
    })
  )

  it.effect("findOne: the first row decoded, or none", () =>
    Effect.gen(function* () {
      const one = Operation.findOne({ name: "test.one", Row: Letter, columns: { heldBy: "held_by" }, sql: "SELECT 1" })
      expect(yield* one(recording([]).client)).toStrictEqual(Option.none())
      expect(yield* one(recording([{ id: "a", attempts: 1, held_by: null }]).client)).toStrictEqual(
        Option.some({ id: "a", attempts: 1, heldBy: null })
      )
      const error = yield* Effect.flip(one(recording([{ id: 1, attempts: 1, held_by: null }]).client))
      expect(error.reason).toMatchObject({ _tag: "UnexpectedRow", operation: "test.one" })
    })
  )

  it.effect("single: no row is UnexpectedRow, not a silent default", () =>
    Effect.gen(function* () {
      const count = Operation.single({ name: "test.count", Row: Schema.Struct({ n: Schema.Number }), sql: "SELECT count(*)::int AS n" })
      expect(yield* count(recording([{ n: 4 }]).client)).toStrictEqual({ n: 4 })
      const error = yield* Effect.flip(count(recording([]).client))
      expect(error.reason).toMatchObject({ _tag: "UnexpectedRow", operation: "test.count", issue: "expected one row, got none" })
    })
  )

  it.effect("count and void read no row; prepared statements ask the client to prepare; sql may depend on the request", () =>
    Effect.gen(function* () {
      const { client, calls } = recording([{ anything: true }, "not even an object"])
      const deleted = Operation.count({
        name: "test.delete",
        params: (r: { readonly table: string; readonly ids: ReadonlyArray<string> }) => [r.ids],
        sql: (r) => `DELETE FROM ${r.table} WHERE id = ANY($1::uuid[]) RETURNING id`,
        prepared: true
      })
      expect(yield* deleted(client, { table: "wh_per_x", ids: ["a"] })).toBe(2)
      expect(yield* Operation.void({ name: "test.void", sql: "SELECT 1" })(client)).toBeUndefined()
      expect(calls).toEqual([
        {
          sql: "DELETE FROM wh_per_x WHERE id = ANY($1::uuid[]) RETURNING id",
          params: [["a"]],
          options: { prepared: true, qualified: true }
        },
        { sql: "SELECT 1", params: undefined, options: { qualified: true } }
      ])
    })
  )
})
