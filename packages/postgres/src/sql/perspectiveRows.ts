/**
 * SQL for one perspective version's table (`wh_per_<base>__v<N>`, see `PerspectiveTable`) and for reads through
 * the view of the live version. Names are validated perspective keys and are quoted; every value is a bound parameter.
 */
import { Schema } from "effect"
import { PerspectiveRows as m } from "../internal/columns.js"
import * as Identifier from "../internal/identifier.js"
import * as Operation from "../internal/operation.js"
import * as PerspectiveTable from "../internal/perspectiveTable.js"

/** The quoted table of one version's read-model rows (`name`: a perspective key). */
export const table = (name: string) => Identifier.quote(PerspectiveTable.ofVersion(name))

/** The quoted relation a read of `name` reads (a base name: the view of the live version). */
const readable = (name: string) => Identifier.quote(PerspectiveTable.forRead(name))

/** The table of a perspective key, created when missing (the text; {@link ensureTable} runs it). */
export const createTable = (name: string) => `
CREATE TABLE IF NOT EXISTS ${table(name)} (
  ${m.id} uuid PRIMARY KEY,
  ${m.data} jsonb NOT NULL,
  ${m.metadata} jsonb NOT NULL DEFAULT '{}'::jsonb,
  ${m.scope} jsonb NOT NULL DEFAULT '{}'::jsonb,
  ${m.createdAt} timestamptz NOT NULL DEFAULT now(),
  ${m.updatedAt} timestamptz NOT NULL DEFAULT now(),
  ${m.version} bigint NOT NULL DEFAULT 1
) WITH (fillfactor = 70)`

/**
 * Creates a perspective key's table when missing.
 *
 * @category operations
 * @since 0.5.0
 */
export const ensureTable = Operation.void({
  name: "perspectiveRows.ensureTable",
  sql: (r: { readonly key: string }) => createTable(r.key)
})

/** One perspective's rows to write (`name`: a perspective key). */
interface Named {
  readonly name: string
}

/**
 * Upserts rows; returns each row's new version.
 *
 * @category operations
 * @since 0.5.0
 */
export const upsertRows = Operation.findAll({
  name: "perspectiveRows.upsertRows",
  Row: Schema.Struct({ id: Schema.String, version: Schema.Number }),
  columns: { id: m.id, version: m.version },
  params: (
    r: Named & {
      readonly ids: ReadonlyArray<string>
      readonly data: ReadonlyArray<string>
      readonly metadata: ReadonlyArray<string>
      readonly scope: ReadonlyArray<string>
      readonly applied: ReadonlyArray<number>
    }
  ) => [r.ids, r.data, r.metadata, r.scope, r.applied],
  sql: (r) => `
INSERT INTO ${table(r.name)} AS t (${m.id}, ${m.data}, ${m.metadata}, ${m.scope}, ${m.version})
SELECT id, data, metadata, scope, applied FROM unnest($1::uuid[], $2::jsonb[], $3::jsonb[], $4::jsonb[], $5::int[]) AS r(id, data, metadata, scope, applied)
ON CONFLICT (${m.id}) DO UPDATE
  SET ${m.data} = excluded.${m.data}, ${m.metadata} = excluded.${m.metadata}, ${m.scope} = excluded.${m.scope}, ${m.version} = t.${m.version} + excluded.${m.version}, ${m.updatedAt} = excluded.${m.updatedAt}
RETURNING t.${m.id}, t.${m.version}::int AS ${m.version}`
})

/**
 * Deletes rows by id.
 *
 * @category operations
 * @since 0.5.0
 */
export const deleteRows = Operation.void({
  name: "perspectiveRows.deleteRows",
  params: (r: Named & { readonly ids: ReadonlyArray<string> }) => [r.ids],
  sql: (r) => `DELETE FROM ${table(r.name)} WHERE ${m.id} = ANY($1::uuid[])`
})

/**
 * A read-model row as a read returns it (`PerspectiveStore.Row` but for its times).
 *
 * @category models
 * @since 0.5.0
 */
export const Row = Schema.Struct({
  id: Schema.String,
  // jsonb, decoded by the perspective's model schema (its reader), not here.
  data: Schema.Unknown,
  metadata: Schema.Unknown,
  scope: Schema.Unknown,
  version: Schema.Number,
  createdAt: Schema.Date,
  updatedAt: Schema.Date
})

const rowColumns = {
  id: m.id,
  data: m.data,
  metadata: m.metadata,
  scope: m.scope,
  version: m.version,
  createdAt: m.createdAt,
  updatedAt: m.updatedAt
} as const

const selected = `${m.id}, ${m.data}, ${m.metadata}, ${m.scope}, ${m.version}::int AS ${m.version}, ${m.createdAt}, ${m.updatedAt}`

/**
 * The rows of these ids (those that exist), read through the view of the live version for a base name.
 *
 * @category operations
 * @since 0.5.0
 */
export const selectRows = Operation.findAll({
  name: "perspectiveRows.selectRows",
  Row,
  columns: rowColumns,
  params: (r: Named & { readonly ids: ReadonlyArray<string> }) => [r.ids],
  prepared: true,
  sql: (r) => `SELECT ${selected} FROM ${readable(r.name)} WHERE ${m.id} = ANY($1::uuid[])`
})

/**
 * Rows whose data contains `where` (JSON containment), by id, a page at a time.
 *
 * @category operations
 * @since 0.5.0
 */
export const queryRows = Operation.findAll({
  name: "perspectiveRows.queryRows",
  Row,
  columns: rowColumns,
  params: (r: Named & { readonly where: string; readonly limit: number; readonly offset: number }) => [r.where, r.limit, r.offset],
  prepared: true,
  sql: (r) => `SELECT ${selected} FROM ${readable(r.name)} WHERE ${m.data} @> $1::jsonb ORDER BY ${m.id} LIMIT $2::int OFFSET $3::int`
})
