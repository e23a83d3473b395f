/**
 * drizzle `pg-core` source for the perspectives' relations, column for column the table that `@whizbang/postgres`
 * creates (packages/postgres/src/sql/perspectiveRows.ts `createTable`):
 *
 * - per declared version, its own table `wh_per_<base>__v<N>` (version 1 included), so drizzle-kit generates the
 *   same DDL into the project's migrations (Whizbang creates it `IF NOT EXISTS`, so either may come first);
 * - per base name, `wh_per_<base>`: the view of the live version that reads go through. Whizbang creates it and
 *   replaces it at each cutover and rollback, so it is declared `.existing()`: drizzle-kit leaves it alone.
 */

export interface DrizzleOptions {
  /** A Postgres schema to qualify the tables with; unqualified (the connection's search_path) when absent. */
  readonly schema?: string | undefined
}

export const drizzleImports = (options: DrizzleOptions): ReadonlyArray<string> => [
  "bigint",
  "jsonb",
  ...(options.schema === undefined ? ["pgTable", "pgView"] : ["pgSchema"]),
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

/** `wh_per_<base>__v<N>`: one version's own rows (`key`: the version's key). */
export const renderTable = (key: string, baseName: string, version: number, constName: string, options: DrizzleOptions): string => {
  const table = `wh_per_${baseName}__v${version}`
  const factory = options.schema === undefined ? "pgTable" : `${schemaConst}.table`
  return [
    `/** \`${table}\`: the rows of version ${version} of perspective "${baseName}" (key "${key}"), one per stream. Read through the view. */`,
    `export const ${constName} = ${factory}(${JSON.stringify(table)}, {`,
    ...columns(true),
    `})`,
    ""
  ].join("\n")
}

/** `wh_per_<base>`: the view of the live version, what reads go through; Whizbang owns it (`.existing()`). */
export const renderView = (baseName: string, versions: ReadonlyArray<number>, constName: string, options: DrizzleOptions): string => {
  const view = `wh_per_${baseName}`
  const factory = options.schema === undefined ? "pgView" : `${schemaConst}.view`
  const declared = versions.map((v) => `v${v}`).join(", ")
  return [
    `/**`,
    ` * \`${view}\`: the rows of perspective "${baseName}" as read, one per stream: a view of the live version's table`,
    ` * (declared: ${declared}), replaced by each cutover and rollback. Whizbang creates it; drizzle-kit leaves it alone.`,
    ` */`,
    `export const ${constName} = ${factory}(${JSON.stringify(view)}, {`,
    ...columns(false),
    `}).existing()`,
    ""
  ].join("\n")
}

// A view has no keys nor defaults: its columns only type what a read returns.
const columns = (table: boolean): ReadonlyArray<string> => {
  const rest = (text: string) => (table ? text : ".notNull()")
  return [
    `  id: uuid("id")${table ? ".primaryKey()" : ".notNull()"},`,
    `  data: jsonb("data").notNull(),`,
    `  metadata: jsonb("metadata")${rest(".notNull().default({})")},`,
    `  scope: jsonb("scope")${rest(".notNull().default({})")},`,
    `  createdAt: timestamp("created_at", { withTimezone: true })${rest(".notNull().defaultNow()")},`,
    `  updatedAt: timestamp("updated_at", { withTimezone: true })${rest(".notNull().defaultNow()")},`,
    `  version: bigint("version", { mode: "number" })${rest(".notNull().default(1)")}`
  ]
}
