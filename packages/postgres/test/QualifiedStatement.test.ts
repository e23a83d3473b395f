import { describe, expect, it } from "@effect/vitest"
import { readdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as QualifiedStatement from "../src/internal/qualifiedStatement.js"
import * as Claim from "../src/sql/claimWork.js"
import * as Fetch from "../src/sql/fetchPendingEvents.js"
import * as Rows from "../src/sql/perspectiveRows.js"

const q = (sql: string) => QualifiedStatement.qualify(sql)
const S = '"__whizbang_schema__".'

/** A `wh_` name left unqualified. */
const unqualified = /(?<![\w."])wh_\w+|(?<![\w.])"wh_\w+/
/** `text` without its comments, literals and qualified names: what could still name a relation by the path. */
const bareOf = (text: string) =>
  text
    .replace(/--[^\n]*/g, "")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/"[^"]*"\."?wh_\w+"?/g, "")

describe("QualifiedStatement.qualify", () => {
  it("qualifies every wh_ relation and function, plain or quoted, outside literals and comments", () => {
    expect(q("SELECT e.x FROM wh_events e JOIN wh_perspective_events pe ON pe.event_id = e.event_id")).toBe(
      `SELECT e.x FROM ${S}wh_events e JOIN ${S}wh_perspective_events pe ON pe.event_id = e.event_id`
    )
    expect(q("SELECT wh_complete_work($1::uuid), pg_notify('wh_processed', 'it''s wh_events')")).toBe(
      `SELECT ${S}wh_complete_work($1::uuid), pg_notify('wh_processed', 'it''s wh_events')`
    )
    expect(q('-- the worker\'s wh_events\nSELECT "wh_events".a FROM wh_per_orders /* wh_x */ WHERE x.wh_y = 1')).toBe(
      `-- the worker's wh_events\nSELECT ${S}"wh_events".a FROM ${S}wh_per_orders /* wh_x */ WHERE x.wh_y = 1`
    )
    // A perspective's table, quoted; a quoted name that is not Whizbang's stays as it is.
    expect(q('SELECT m.data FROM "wh_per_counter__v1" m JOIN "Orders" o ON true')).toBe(
      `SELECT m.data FROM ${S}"wh_per_counter__v1" m JOIN "Orders" o ON true`
    )
    // Already qualified, or only part of a longer word: untouched.
    expect(q("SELECT 1 FROM s.wh_events, xwh_events, wh_events_x")).toBe(`SELECT 1 FROM s.wh_events, xwh_events, ${S}wh_events_x`)
  })

  it("current_schema() becomes the schema's name; what names nothing of Whizbang's runs as it is", () => {
    expect(q("SELECT wh_notify_versions($1::text[]), pg_notify('wh_processed', current_schema())")).toBe(
      `SELECT ${S}wh_notify_versions($1::text[]), pg_notify('wh_processed', '__whizbang_schema__')`
    )
    expect(
      q("SELECT 1 FROM pg_class c WHERE c.relnamespace = CURRENT_SCHEMA ( )::regnamespace AND d.classid = 'pg_rewrite'::regclass")
    ).toBe("SELECT 1 FROM pg_class c WHERE c.relnamespace = '__whizbang_schema__'::regnamespace AND d.classid = 'pg_rewrite'::regclass")
    expect(q("SELECT $1::int AS n")).toBe("SELECT $1::int AS n")
  })

  it("leaves on the search_path what it must not or cannot rewrite: schema changes, relations named at run time, $$ bodies", () => {
    expect(q("CREATE INDEX IF NOT EXISTS wh_per_x_idx ON wh_per_x (a)")).toBeUndefined()
    expect(q("SELECT to_regclass('wh_perspective_versions') IS NOT NULL")).toBeUndefined()
    expect(q("SELECT 'wh_events'::regclass")).toBeUndefined()
    expect(q("DO $$ BEGIN PERFORM 1 FROM wh_events; END $$")).toBeUndefined()
  })

  it("for a schema: the placeholders become the quoted schema and its name", () => {
    expect(QualifiedStatement.forSchema(q("SELECT 1 FROM wh_events WHERE current_schema() = 'x'")!, "tenant_a")).toBe(
      `SELECT 1 FROM "tenant_a".wh_events WHERE 'tenant_a' = 'x'`
    )
  })

  it("every operation of @whizbang/postgres: rewritten with no unqualified wh_ name left, or left whole on the search_path", async () => {
    const dir = fileURLToPath(new URL("../src/sql/", import.meta.url))
    let rewritten = 0
    for (const file of readdirSync(dir)) {
      const module = (await import(`../src/sql/${file}`)) as Record<string, unknown>
      for (const [name, value] of Object.entries(module)) {
        const sql = (value as { readonly sql?: unknown } | undefined)?.sql
        if (typeof sql !== "string") continue
        const text = q(sql)
        if (text === undefined) continue
        rewritten++
        const bare = bareOf(text)
        expect(unqualified.exec(bare)?.[0], `${file} ${name}`).toBeUndefined()
      }
    }
    expect(rewritten).toBeGreaterThan(100)
    // Texts built per call: the claim's and the fetch's with the perspectives' model tables.
    for (const text of [
      Claim.claimAndFetchSql([Rows.table("counter"), Rows.table("summary")]),
      Fetch.fetchPendingEventsSql([Rows.table("counter")])
    ]) {
      const bare = bareOf(q(text)!)
      expect(unqualified.exec(bare)?.[0]).toBeUndefined()
      expect(q(text)).toContain(`${S}"wh_per_counter__v1"`)
    }
  })
})
