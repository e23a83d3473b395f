/**
 * The tables and the view of one perspective base name: a pre-versions `wh_per_<base>` table becomes version 1's
 * own table, each declared version gets its table, and `wh_per_<base>` becomes (or stays) a view of the live
 * version. Runs in the caller's transaction, under the DDL lock.
 *
 * @internal
 */
import { Perspective } from "@whizbang/core"
import { Effect, Option, Schema } from "effect"
import type { PgClient } from "../PgClient.js"
import * as PerspectiveTable from "./perspectiveTable.js"
import type { PostgresError } from "../PostgresError.js"
import * as Rows from "../sql/perspectiveRows.js"
import * as Sql from "../sql/versions.js"
import { VersionTableConflict } from "../VersionError.js"
import { PerspectiveVersions as v } from "./columns.js"
import * as Operation from "./operation.js"

/**
 * The layout of these bases in one read-only statement, for the fast path of start-up: their registered versions,
 * the kinds of the relations named (`$2`) and the tables each view of `$3` reads. Params: $1 base names, $2 relation
 * names, $3 view names. Its one row's columns are JSON arrays the statement builds.
 */
const layoutOf = Operation.single({
  name: "versionTables.layout",
  Row: Schema.Struct({
    versions: Schema.Array(
      Schema.Struct({
        name: Schema.String,
        base: Schema.String,
        state: Schema.String,
        types: Schema.Array(Schema.String),
        fingerprint: Schema.NullOr(Schema.String)
      })
    ),
    relations: Schema.Array(Schema.Struct({ name: Schema.String, kind: Schema.String })),
    views: Schema.Array(Schema.Struct({ view: Schema.String, table: Schema.String }))
  }),
  params: (r: {
    readonly bases: ReadonlyArray<string>
    readonly relations: ReadonlyArray<string>
    readonly views: ReadonlyArray<string>
  }) => [r.bases, r.relations, r.views],
  sql: `
SELECT
  (SELECT coalesce(json_agg(json_build_object('name', v.${v.perspectiveName}, 'base', v.${v.baseName}, 'state', v.${v.state},
     'types', v.${v.eventTypes}, 'fingerprint', v.${v.fingerprint})), '[]'::json)
   FROM ${v.table} v WHERE v.${v.baseName} = ANY($1::text[])) AS versions,
  (SELECT coalesce(json_agg(json_build_object('name', c.relname, 'kind', c.relkind::text)), '[]'::json)
   FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY($2::text[])) AS relations,
  (SELECT coalesce(jsonb_agg(DISTINCT jsonb_build_object('view', w.relname, 'table', t.relname)), '[]'::jsonb)
   FROM pg_class w
   JOIN pg_rewrite r ON r.ev_class = w.oid
   JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
   JOIN pg_class t ON t.oid = d.refobjid AND t.oid <> w.oid
   WHERE w.relnamespace = current_schema()::regnamespace AND w.relkind = 'v' AND w.relname = ANY($3::text[])) AS views`
})

/** What {@link readLayout} found. */
export interface Layout {
  readonly versions: ReadonlyArray<{
    readonly name: string
    readonly base: string
    readonly state: string
    readonly types: ReadonlyArray<string>
    readonly fingerprint: string | null
  }>
  /** Relation name -> relkind. */
  readonly kinds: ReadonlyMap<string, string>
  /** View name -> the relations it reads. */
  readonly reads: ReadonlyMap<string, ReadonlySet<string>>
}

/** Reads the layout of these bases and keys (one statement, no lock). @internal */
export const readLayout = (
  client: PgClient["Service"],
  byBase: ReadonlyMap<string, ReadonlyArray<string>>
): Effect.Effect<Layout, PostgresError> => {
  const bases = [...byBase.keys()]
  const views = bases.map(PerspectiveTable.served)
  const tables = [...byBase.values()].flat().map(PerspectiveTable.ofVersion)
  return Effect.map(layoutOf(client, { bases, relations: [...views, ...tables], views }), (row) => {
    const reads = new Map<string, Set<string>>()
    for (const v of row.views) reads.set(v.view, (reads.get(v.view) ?? new Set()).add(v.table))
    return {
      versions: row.versions,
      kinds: new Map(row.relations.map((r) => [r.name, r.kind])),
      reads
    }
  })
}

const isTable = (kind: string | undefined) => kind === "r" || kind === "p"

/**
 * Whether {@link ensureBase} would change nothing for these bases: `wh_per_<base>` is a view, every key's table
 * exists, and with a live version the view reads exactly that version's table. Start-up then skips the DDL
 * transaction (its lock and a dozen statements per perspective): what a tenant's services pay at every start.
 *
 * @internal
 */
export const isLaidOut = (layout: Layout, byBase: ReadonlyMap<string, ReadonlyArray<string>>): boolean =>
  [...byBase].every(([baseName, keys]) => {
    const served = PerspectiveTable.served(baseName)
    if (layout.kinds.get(served) !== "v") return false
    if (!keys.every((key) => isTable(layout.kinds.get(PerspectiveTable.ofVersion(key))))) return false
    const live = layout.versions.find((v) => v.base === baseName && v.state === "live")
    if (live === undefined) return true
    const reads = layout.reads.get(served)
    const table = PerspectiveTable.ofVersion(live.name)
    return reads !== undefined && reads.size === 1 && reads.has(table) && isTable(layout.kinds.get(table))
  })

/** Concurrent DDL from two instances can still collide on the catalog: one at a time per schema. */
export const ddlLock = Operation.void({
  name: "versionTables.ddlLock",
  sql: `SELECT pg_advisory_xact_lock(hashtextextended('@whizbang/postgres/PgPerspectiveStore:' || current_schema(), 0))`
})

const kindOf = (client: PgClient["Service"], relation: string) =>
  Effect.map(Sql.relationKind(client, { relation }), (row) => Option.getOrUndefined(row)?.kind)

/**
 * What the caller read already under the DDL lock: the kinds of `wh_per_<base>` and of version 1's table (absent:
 * no such relation), and the live version after its own registrations.
 *
 * @internal
 */
export interface Known {
  readonly kinds: ReadonlyMap<string, string>
  readonly live: string | undefined
}

/**
 * Lays out one base (see the module notes). Without `known`, it reads what it needs itself (three statements more).
 *
 * @internal
 */
export const ensureBase = (
  client: PgClient["Service"],
  baseName: string,
  keys: ReadonlyArray<string>,
  known?: Known
): Effect.Effect<void, PostgresError | VersionTableConflict> =>
  Effect.gen(function* () {
    const served = PerspectiveTable.served(baseName)
    const kindOfRelation = (relation: string) =>
      known === undefined ? kindOf(client, relation) : Effect.succeed(known.kinds.get(relation))
    const kind = yield* kindOfRelation(served)
    if (kind === "r" || kind === "p") {
      const v1 = PerspectiveTable.ofVersion(baseName)
      if ((yield* kindOfRelation(v1)) !== undefined) {
        return yield* new VersionTableConflict({ relation: v1, reason: `exists, so table ${served} cannot become version 1's table` })
      }
      yield* Sql.renameLegacyTable(client, { baseName })
    } else if (kind !== undefined && kind !== "v") {
      return yield* new VersionTableConflict({ relation: served, reason: `exists and is neither a table nor a view (relkind ${kind})` })
    }
    for (const key of keys) yield* Rows.ensureTable(client, { key })
    const live = known === undefined ? Option.getOrUndefined(yield* Sql.liveVersionOf(client, { baseName }))?.key : known.live
    if (live !== undefined) {
      if (!keys.includes(live)) yield* Rows.ensureTable(client, { key: live })
      yield* Sql.replaceView(client, { baseName, key: live })
    } else if (kind !== "v") {
      const lowest = [...keys].sort((a, b) => Perspective.parseKey(a).version - Perspective.parseKey(b).version)[0]
      if (lowest !== undefined) yield* Sql.replaceView(client, { baseName, key: lowest })
    }
  })
