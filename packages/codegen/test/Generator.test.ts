import { afterAll, describe, expect, it } from "@effect/vitest"
import ts from "typescript"
import type { Definitions } from "../src/Generator.js"
import * as Generator from "../src/Generator.js"
import * as Scanner from "../src/Scanner.js"
import { fixture, removeProjects } from "./project.js"

afterAll(removeProjects)

const at = { file: "/p/src/events.ts", line: 1, column: 1 }
const event = (type: string, exportName = type, file = at.file) => ({ ...at, file, type, exportName })
const perspective = (name: string, eventTypes: ReadonlyArray<string>, exportName = name, file = "/p/src/perspectives.ts", version = 1) => ({
  ...at,
  file,
  name: version === 1 ? name : `${name}__v${version}`,
  baseName: name,
  version,
  exportName,
  eventTypes,
  references: []
})

const syntaxErrors = (source: string) =>
  ts.transpileModule(source, { reportDiagnostics: true, compilerOptions: { module: ts.ModuleKind.ESNext } }).diagnostics ?? []

describe("Generator", () => {
  it("renders the valid fixture exactly as committed", async () => {
    const root = fixture("valid")
    const outFile = `${root}/src/whizbang.generated.ts`
    const scan = Scanner.scan({ root, include: ["src/**/*.ts"], ignoreFiles: [outFile] })
    const source = Generator.render(scan, { outFile })
    expect(syntaxErrors(source)).toEqual([])
    await expect(source).toMatchFileSnapshot("fixtures/valid/src/whizbang.generated.ts")
  })

  it("is independent of discovery order", () => {
    const definitions: Definitions = {
      events: [event("B"), event("A")],
      perspectives: [perspective("zeta", ["A"]), perspective("alpha", ["B", "A"])],
      receptors: []
    }
    const reversed: Definitions = {
      events: [...definitions.events].reverse(),
      perspectives: [...definitions.perspectives].reverse(),
      receptors: []
    }
    const options = { outFile: "/p/src/gen.ts" }
    expect(Generator.render(reversed, options)).toBe(Generator.render(definitions, options))
  })

  it("aliases clashing names, maps extensions and qualifies tables with a schema", () => {
    const source = Generator.render(
      {
        events: [event("Ev", "events", "/p/src/a.mts"), event("Other", "Thing", "/p/lib/b.ts")],
        perspectives: [perspective("thing", ["Ev", "Unknown"], "Thing", "/p/src/c.ts")],
        receptors: [
          {
            ...at,
            name: "r",
            handles: [],
            awaitPerspectiveSync: [
              { ...at, perspective: "thing", eventTypes: undefined },
              { ...at, perspective: "missing", eventTypes: undefined }
            ]
          }
        ]
      },
      { outFile: "/p/src/generated/registry.ts", importExtension: "", drizzle: { schema: "orders" } }
    )
    expect(syntaxErrors(source)).toEqual([])
    expect(source).toBe(`${Generator.header}
import { bigint, jsonb, pgSchema, timestamp, uuid } from "drizzle-orm/pg-core"
import { Thing } from "../../lib/b"
import { events as events_2 } from "../a.mjs"
import { Thing as Thing_2 } from "../c"

/** Every scanned event definition, sorted by type: \`EventRegistry.make(events)\`. */
export const events = [events_2, Thing] as const

/** Event type -> the perspectives that handle it: the work rows an append inserts. */
export const perspectivesByEventType: Readonly<Record<string, ReadonlyArray<string>>> = {
  "Ev": ["thing"],
  "Unknown": ["thing"]
}

/** The runner registry: every perspective definition, sorted by name. */
export const perspectives = [Thing_2] as const

/** Every perspective name (its key: \`<base>\` for version 1, \`<base>__v<N>\` after), sorted. */
export const perspectiveNames = ["thing"] as const

/** Perspective key -> its base name (\`wh_per_<base>\` serves the live version) and declared version. */
export const perspectiveKeys = {
  "thing": { baseName: "thing", version: 1 }
} as const

/** Base name -> its declared versions, ascending: more than one while a new version is rolled out. */
export const perspectiveVersions = {
  "thing": [1]
} as const

/** Event type -> the perspectives a receptor awaits with \`awaitPerspectiveSync\`: the events to track. */
export const trackedEventTypes: Readonly<Record<string, ReadonlyArray<string>>> = {
  "Ev": ["thing"],
  "Unknown": ["thing"]
}

/** Event type -> the stream id extractor of its definition. */
export const streamIdExtractors: Readonly<Record<string, (payload: any) => string>> = {
  "Ev": events_2.streamId,
  "Other": Thing.streamId
}

const perspectiveSchema = pgSchema("orders")

/**
 * \`wh_per_thing\`: the rows of perspective "thing" as read, one per stream: a view of the live version's table
 * (declared: v1), replaced by each cutover and rollback. Whizbang creates it; drizzle-kit leaves it alone.
 */
export const whPerThing = perspectiveSchema.view("wh_per_thing", {
  id: uuid("id").notNull(),
  data: jsonb("data").notNull(),
  metadata: jsonb("metadata").notNull(),
  scope: jsonb("scope").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull(),
  version: bigint("version", { mode: "number" }).notNull()
}).existing()

/** \`wh_per_thing__v1\`: the rows of version 1 of perspective "thing" (key "thing"), one per stream. Read through the view. */
export const whPerThingV1 = perspectiveSchema.table("wh_per_thing__v1", {
  id: uuid("id").primaryKey(),
  data: jsonb("data").notNull(),
  metadata: jsonb("metadata").notNull().default({}),
  scope: jsonb("scope").notNull().default({}),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  version: bigint("version", { mode: "number" }).notNull().default(1)
})
`)
  })

  it("leaves the drizzle import and tables out when asked, or when there are no perspectives", () => {
    const withPerspective: Definitions = { events: [event("A")], perspectives: [perspective("p", ["A"])], receptors: [] }
    const noTables = Generator.render(withPerspective, { outFile: "/p/src/gen.ts", drizzle: false })
    expect(noTables).not.toContain("drizzle-orm")
    expect(noTables).not.toContain("wh_per_p")
    expect(noTables).toContain(`import { A } from "./events.js"\nimport { p } from "./perspectives.js"\n`)
    const eventsOnly = Generator.render(
      { events: [event("A")], perspectives: [], receptors: [] },
      { outFile: "/p/src/gen.ts", importExtension: ".ts" }
    )
    expect(eventsOnly).not.toContain("drizzle-orm")
    expect(eventsOnly).toContain(`import { A } from "./events.ts"\n`)
    expect(eventsOnly).toContain("export const perspectives = [] as const\n")
    expect(syntaxErrors(eventsOnly)).toEqual([])
  })
})
