// The generated drizzle tables, run through drizzle-kit's own migration generator, must produce the same columns
// as the table @whizbang/postgres creates at run time (packages/postgres/src/sql/perspectiveRows.ts).
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import ts from "typescript"
import { createTable } from "../../postgres/src/sql/perspectiveRows.js"
import * as Generator from "../src/Generator.js"
import { project, removeProjects } from "./project.js"

afterAll(removeProjects)

// drizzle-orm is a dependency of @whizbang/postgres (and of any project using the generated tables), not of codegen.
const pgCore = pathToFileURL(createRequire(new URL("../../postgres/package.json", import.meta.url)).resolve("drizzle-orm/pg-core")).href

// The text inside the column list only: the runtime table's storage parameters (`WITH (fillfactor = 70)`) follow
// it, and drizzle tables have none to compare.
const columnList = (ddl: string) => {
  const table = ddl.replace(/\)\s*WITH\s*\([^)]*\)\s*$/, ")")
  return table.slice(table.indexOf("(") + 1, table.lastIndexOf(")"))
}

const columns = (ddl: string) =>
  columnList(ddl)
    .split(/,\s*\n/)
    .map((line) => {
      const text = line
        .trim()
        .replace(/"/g, "")
        .replace(/timestamp with time zone/g, "timestamptz")
        .replace(/\s+/g, " ")
      const [name, type] = text.split(" ")
      return {
        name,
        type,
        primaryKey: text.includes("PRIMARY KEY"),
        notNull: text.includes("NOT NULL") || text.includes("PRIMARY KEY"),
        default: /DEFAULT (.+?)(?: NOT NULL|$)/.exec(text)?.[1] ?? null
      }
    })

const generatedModule = async (schema: string | undefined) => {
  const source = Generator.render(
    {
      events: [],
      perspectives: [
        {
          name: "order_summary",
          baseName: "order_summary",
          version: 1,
          exportName: undefined,
          eventTypes: [],
          references: [],
          file: "/p/a.ts",
          line: 1,
          column: 1
        },
        {
          name: "order_summary__v2",
          baseName: "order_summary",
          version: 2,
          exportName: undefined,
          eventTypes: [],
          references: [],
          file: "/p/b.ts",
          line: 1,
          column: 1
        }
      ],
      receptors: []
    },
    { outFile: "/p/gen.ts", drizzle: schema === undefined ? {} : { schema } }
  )
  const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText
  const file = Path.join(project({}), `tables-${schema ?? "default"}.mjs`)
  Fs.writeFileSync(file, js.replace(`"drizzle-orm/pg-core"`, JSON.stringify(pgCore)))
  return (await import(pathToFileURL(file).href)) as Record<string, unknown>
}

const generatedDdl = async (schema: string | undefined) => {
  const tables = await generatedModule(schema)
  const api = await import("drizzle-kit/api")
  return api.generateMigration(api.generateDrizzleJson({}), api.generateDrizzleJson(tables))
}

describe("generated drizzle tables", () => {
  it("make drizzle-kit emit exactly the columns of each version's runtime table, and leave the view of the live one alone", async () => {
    const statements = await generatedDdl(undefined)
    expect(statements).toHaveLength(2)
    expect(statements[0]).toMatch(/^CREATE TABLE "wh_per_order_summary__v1" \(/)
    expect(statements[1]).toMatch(/^CREATE TABLE "wh_per_order_summary__v2" \(/)
    expect(createTable("order_summary")).toMatch(/"wh_per_order_summary__v1"/)
    expect(columns(statements[0]!)).toEqual(columns(createTable("order_summary")))
    expect(columns(statements[1]!)).toEqual(columns(createTable("order_summary__v2")))
    expect(columns(statements[0]!).map((c) => c.name)).toEqual(["id", "data", "metadata", "scope", "created_at", "updated_at", "version"])
  })

  it("read through the view of the live version", async () => {
    const tables = await generatedModule("orders")
    const { QueryBuilder } = (await import(pgCore)) as typeof import("drizzle-orm/pg-core")
    const query = new QueryBuilder()
      .select()
      .from(tables.whPerOrderSummary as never)
      .toSQL()
    expect(query.sql).toMatch(/ from "orders"\."wh_per_order_summary"$/)
    expect(query.sql).toMatch(/^select "id", "data", "metadata", "scope", "created_at", "updated_at", "version" from/)
  })

  it("qualify the table with the configured schema, without creating the schema", async () => {
    const statements = await generatedDdl("orders")
    expect(statements).toHaveLength(2)
    expect(statements[0]).toMatch(/^CREATE TABLE "orders"\."wh_per_order_summary__v1" \(/)
  })
})
