/**
 * drizzle `pg-core` source for the `wh_per_<name>` tables, column for column the table that
 * `@whizbang/postgres` creates (packages/postgres/src/sql/perspectiveRows.ts `createTable`), so drizzle-kit
 * generates the same DDL into the project's migrations.
 */

export interface DrizzleOptions {
  /** A Postgres schema to qualify the tables with; unqualified (the connection's search_path) when absent. */
  readonly schema?: string | undefined
}

export const drizzleImports = (options: DrizzleOptions): ReadonlyArray<string> => [
  "bigint",
  "jsonb",
  options.schema === undefined ? "pgTable" : "pgSchema",
  "timestamp",
  "uuid"
]

const pascal = (name: string) =>
  name
    .split("_")
    .filter((part) => part.length > 0)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join("")

/** `order_summary` -> `whPerOrderSummary`, made unique against `taken`. */
export const tableConstName = (perspective: string, taken: Set<string>): string => {
  const base = `whPer${pascal(perspective)}`
  let name = base
  for (let n = 2; taken.has(name); n++) name = `${base}_${n}`
  taken.add(name)
  return name
}

export const schemaConst = "perspectiveSchema"

export const renderSchema = (options: DrizzleOptions): string =>
  options.schema === undefined ? "" : `const ${schemaConst} = pgSchema(${JSON.stringify(options.schema)})\n\n`

export const renderTable = (perspective: string, constName: string, options: DrizzleOptions): string => {
  const table = `wh_per_${perspective}`
  const factory = options.schema === undefined ? "pgTable" : `${schemaConst}.table`
  return [
    `/** \`${table}\`: the rows of perspective "${perspective}", one per stream. */`,
    `export const ${constName} = ${factory}(${JSON.stringify(table)}, {`,
    `  id: uuid("id").primaryKey(),`,
    `  data: jsonb("data").notNull(),`,
    `  metadata: jsonb("metadata").notNull().default({}),`,
    `  scope: jsonb("scope").notNull().default({}),`,
    `  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),`,
    `  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),`,
    `  version: bigint("version", { mode: "number" }).notNull().default(1)`,
    `})`,
    ""
  ].join("\n")
}
