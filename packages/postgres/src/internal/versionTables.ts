/**
 * The tables and the view of one perspective base name: a pre-versions `wh_per_<base>` table becomes version 1's
 * own table, each declared version gets its table, and `wh_per_<base>` becomes (or stays) a view of the live
 * version. Runs in the caller's transaction, under the DDL lock.
 *
 * @internal
 */
import { Perspective } from "@whizbang/core"
import { Effect } from "effect"
import type { PgClient } from "../PgClient.js"
import * as PerspectiveTable from "../PerspectiveTable.js"
import type { PostgresError } from "../PostgresError.js"
import * as Rows from "../sql/perspectiveRows.js"
import * as Sql from "../sql/versions.js"
import { VersionTableConflict } from "../VersionError.js"

/** Concurrent DDL from two instances can still collide on the catalog: one at a time per schema. */
export const ddlLock = `SELECT pg_advisory_xact_lock(hashtextextended('@whizbang/postgres/PgPerspectiveStore:' || current_schema(), 0))`

const kindOf = (client: PgClient["Service"], relation: string) =>
  Effect.map(client.query<{ kind: string }>(Sql.relationKind, [relation]), (rows) => rows[0]?.kind)

/** @internal */
export const ensureBase = (
  client: PgClient["Service"],
  baseName: string,
  keys: ReadonlyArray<string>
): Effect.Effect<void, PostgresError | VersionTableConflict> =>
  Effect.gen(function* () {
    const served = PerspectiveTable.served(baseName)
    const kind = yield* kindOf(client, served)
    if (kind === "r" || kind === "p") {
      const v1 = PerspectiveTable.ofVersion(baseName)
      if ((yield* kindOf(client, v1)) !== undefined) {
        return yield* new VersionTableConflict({ relation: v1, reason: `exists, so table ${served} cannot become version 1's table` })
      }
      yield* client.query(Sql.renameLegacyTable(baseName))
    } else if (kind !== undefined && kind !== "v") {
      return yield* new VersionTableConflict({ relation: served, reason: `exists and is neither a table nor a view (relkind ${kind})` })
    }
    for (const key of keys) yield* client.query(Rows.createTable(key))
    const registry = yield* client.query<{ perspective_name: string }>(
      `SELECT perspective_name FROM wh_perspective_versions WHERE base_name = $1::text AND state = 'live'`,
      [baseName]
    )
    const live = registry[0]?.perspective_name
    if (live !== undefined) {
      yield* client.query(Rows.createTable(live))
      yield* client.query(Sql.replaceView(baseName, live))
    } else if (kind !== "v") {
      const lowest = [...keys].sort((a, b) => Perspective.parseKey(a).version - Perspective.parseKey(b).version)[0]
      if (lowest !== undefined) yield* client.query(Sql.replaceView(baseName, lowest))
    }
  })
