/**
 * The schemas of this database that hold Whizbang tables, for an operator's "no such table" hint.
 */
import { Schema } from "effect"
import { Events } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * The schemas of this database with a `wh_events` table, by name.
 *
 * @category operations
 * @since 0.5.0
 */
export const withWhizbangTables = Operation.findAll({
  name: "schemas.withWhizbangTables",
  Row: Schema.Struct({ schema: Schema.String }),
  sql: `
SELECT n.nspname AS schema FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname = '${Events.table}' AND c.relkind IN ('r', 'p') ORDER BY 1`
})
