/**
 * The queue's upkeep (`PgQueueVacuum`): a vacuum of the queue tables, and an analyze of those whose statistics are
 * stale. Names resolve on the connection's schema.
 */
import { Schema } from "effect"
import { ActiveStreams as a, PerspectiveCursors as c, PerspectiveEvents as pe } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * Vacuums both queue tables, skipping a table another session is vacuuming, never truncating.
 *
 * @category operations
 * @since 0.5.0
 */
export const vacuum = Operation.void({
  name: "queueVacuum.vacuum",
  sql: `VACUUM (SKIP_LOCKED, TRUNCATE false) ${pe.table}, ${a.table}`
})

/** The tables {@link staleStatistics} looks at, and the only ones {@link analyze} is given. */
export const queueTables: ReadonlySet<string> = new Set([pe.table, a.table, c.table])

/**
 * The queue tables whose statistics are stale: changed by more than 1,000 rows plus a fifth of their estimated size
 * since their last analyze (autovacuum analyzes at 50 plus a tenth: this finds only a table it has fallen well
 * behind on).
 *
 * @category operations
 * @since 0.5.0
 */
export const staleStatistics = Operation.findAll({
  name: "queueVacuum.staleStatistics",
  Row: Schema.Struct({ table: Schema.String }),
  sql: `SELECT s.relname::text AS table FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
WHERE s.relid IN (to_regclass('${pe.table}'), to_regclass('${a.table}'), to_regclass('${c.table}'))
  AND s.n_mod_since_analyze > 1000 + 0.2 * greatest(c.reltuples, 0)`
})

/**
 * Analyzes these tables (of {@link queueTables}: the text names them as given).
 *
 * @category operations
 * @since 0.5.0
 */
export const analyze = Operation.void({
  name: "queueVacuum.analyze",
  sql: (r: { readonly tables: ReadonlyArray<string> }) => `ANALYZE ${r.tables.join(", ")}`
})
