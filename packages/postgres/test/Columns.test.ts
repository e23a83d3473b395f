// The registry of `wh_` table and column names (src/internal/columns.ts) is the one place the operations spell them.
// These checks hold it to the drizzle schema drizzle-kit generates the migrations from, at compile time (a column
// renamed in src/schema/ fails `pnpm typecheck` here) and at run time, and show that a misspelled column through the
// registry does not compile.
import { describe, expect, it } from "@effect/vitest"
import { getTableName } from "drizzle-orm"
import { Effect, Schema } from "effect"
import * as Columns from "../src/internal/columns.js"
import * as Operation from "../src/internal/operation.js"
import { whActiveStreams } from "../src/schema/activeStreams.js"
import { whDeadLetters } from "../src/schema/deadLetters.js"
import { whEvents } from "../src/schema/events.js"
import { whLifecyclePending } from "../src/schema/lifecyclePending.js"
import { whPerspectiveCursors } from "../src/schema/perspectiveCursors.js"
import { whPerspectiveEvents } from "../src/schema/perspectiveEvents.js"
import { whPerspectiveSnapshots } from "../src/schema/perspectiveSnapshots.js"
import { whServiceInstances } from "../src/schema/serviceInstances.js"
import { PgMigrator } from "@whizbang/postgres"

// The registry of a drizzle table: its name, and each column's key mapped to its column name, as literal types.
type ColumnNames<T extends { readonly _: { readonly name: string; readonly columns: object } }> = {
  readonly [K in keyof T["_"]["columns"]]: T["_"]["columns"][K] extends { readonly _: { readonly name: infer N } } ? N : never
}
type RegistryOf<T extends { readonly _: { readonly name: string; readonly columns: object } }> = {
  readonly [K in "table" | keyof ColumnNames<T>]: K extends keyof ColumnNames<T> ? ColumnNames<T>[K] : T["_"]["name"]
}

type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false
const agrees = <_ extends true>() => undefined

// Compile time: each registry is exactly its drizzle table (same keys, same column names).
agrees<Equal<typeof Columns.Events, RegistryOf<typeof whEvents>>>()
agrees<Equal<typeof Columns.PerspectiveEvents, RegistryOf<typeof whPerspectiveEvents>>>()
agrees<Equal<typeof Columns.PerspectiveCursors, RegistryOf<typeof whPerspectiveCursors>>>()
agrees<Equal<typeof Columns.ActiveStreams, RegistryOf<typeof whActiveStreams>>>()
agrees<Equal<typeof Columns.LifecyclePending, RegistryOf<typeof whLifecyclePending>>>()
agrees<Equal<typeof Columns.ServiceInstances, RegistryOf<typeof whServiceInstances>>>()
agrees<Equal<typeof Columns.DeadLetters, RegistryOf<typeof whDeadLetters>>>()
agrees<Equal<typeof Columns.PerspectiveSnapshots, RegistryOf<typeof whPerspectiveSnapshots>>>()

const drizzleTables = [
  [Columns.Events, whEvents],
  [Columns.PerspectiveEvents, whPerspectiveEvents],
  [Columns.PerspectiveCursors, whPerspectiveCursors],
  [Columns.ActiveStreams, whActiveStreams],
  [Columns.LifecyclePending, whLifecyclePending],
  [Columns.ServiceInstances, whServiceInstances],
  [Columns.DeadLetters, whDeadLetters],
  [Columns.PerspectiveSnapshots, whPerspectiveSnapshots]
] as const

describe("the registry of wh_ tables and columns", () => {
  it("names every drizzle table and column as the drizzle schema does", () => {
    for (const [registry, table] of drizzleTables) {
      const { table: name, ...columns } = registry
      expect(name).toBe(getTableName(table))
      const drizzleColumns = Object.fromEntries(
        Object.entries(table).flatMap(([key, column]) =>
          typeof column === "object" && column !== null && "columnType" in column ? [[key, (column as { name: string }).name]] : []
        )
      )
      expect(columns, name).toEqual(drizzleColumns)
    }
  })

  it("names the tables of migration 0005 (no drizzle table) with the columns their CREATE TABLE and later ADD COLUMNs have", () => {
    const sql = PgMigrator.migrations.flatMap((m) => m.statements).join("\n")
    for (const registry of [Columns.PerspectiveVersions, Columns.PerspectiveBackfill]) {
      const { table, ...columns } = registry
      const create = new RegExp(`CREATE TABLE "__whizbang_schema__"\\."${table}" \\(([^;]*?)\\n\\);`).exec(sql)?.[1]
      expect(create, table).toBeDefined()
      const declared = [...create!.matchAll(/^\s*"([a-z_]+)" /gm)].map((m) => m[1])
      const alters = [...sql.matchAll(new RegExp(`ALTER TABLE "__whizbang_schema__"\\."${table}"([^;]*);`, "g"))].map((m) => m[1]!)
      const added = alters.flatMap((alter) => [...alter.matchAll(/ADD COLUMN "([a-z_]+)"/g)].map((m) => m[1]))
      expect(Object.values(columns).sort(), table).toEqual([...declared, ...added].sort())
    }
  })

  it("a misspelled column through the registry does not compile, in a statement or a row's columns", () => {
    const c = Columns.PerspectiveCursors
    // @ts-expect-error: `streamID` is not a column of wh_perspective_cursors (renamed or misspelled)
    const statement = `SELECT ${c.streamID} FROM ${c.table}`
    const op = Operation.findAll({
      name: "test.misspelled",
      Row: Schema.Struct({ streamId: Schema.String }),
      // @ts-expect-error: a row's columns name its fields; `streamID` is none of them
      columns: { streamID: c.streamId },
      sql: statement
    })
    expect(op.operation).toBe("test.misspelled")
  })

  it("a decoded row has the row schema's fields, never the column names", () =>
    Effect.gen(function* () {
      const c = Columns.PerspectiveCursors
      const op = Operation.findAll({
        name: "test.renamed",
        Row: Schema.Struct({ streamId: Schema.String }),
        columns: { streamId: c.streamId },
        sql: `SELECT ${c.streamId} FROM ${c.table}`
      })
      const client = { query: () => Effect.succeed([{ stream_id: "s" }]) } as never
      const [row] = yield* op(client)
      // @ts-expect-error: the column name is not a field of the decoded row
      expect(row?.stream_id).toBeUndefined()
      expect(row?.streamId).toBe("s")
    }))
})
