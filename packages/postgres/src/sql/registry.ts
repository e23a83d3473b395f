/**
 * The perspective versions registry (`wh_perspective_versions`, migration 0005) as an operator reads it: which
 * perspectives a release of the service registered, their versions, states and the event types each handles.
 */
import { Schema } from "effect"
import { PerspectiveVersions as v } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * A version's state (the table's check constraint).
 *
 * @category models
 * @since 0.5.0
 */
export const State = Schema.Literals(["building", "ready", "live", "retiring", "retired"])

/**
 * One registered version.
 *
 * @category models
 * @since 0.5.0
 */
export const Registered = Schema.Struct({
  perspectiveName: Schema.String,
  baseName: Schema.String,
  version: Schema.Number,
  state: State,
  eventTypes: Schema.Array(Schema.String)
})

const registeredColumns = {
  perspectiveName: v.perspectiveName,
  baseName: v.baseName,
  version: v.version,
  state: v.state,
  eventTypes: v.eventTypes
} as const

/**
 * Whether the schema has the registry (a schema migrated before 0005 has not).
 *
 * @category operations
 * @since 0.5.0
 */
export const hasRegistry = Operation.single({
  name: "registry.hasRegistry",
  Row: Schema.Struct({ present: Schema.Boolean }),
  sql: `SELECT to_regclass('${v.table}') IS NOT NULL AS present`
})

/**
 * Every registered version, by base name and version.
 *
 * @category operations
 * @since 0.5.0
 */
export const registered = Operation.findAll({
  name: "registry.registered",
  Row: Registered,
  columns: registeredColumns,
  sql: `
SELECT ${v.perspectiveName}, ${v.baseName}, ${v.version}, ${v.state}, ${v.eventTypes} FROM ${v.table} ORDER BY ${v.baseName}, ${v.version}`
})
