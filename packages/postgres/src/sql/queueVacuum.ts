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
 * An expression: the names of the queue tables of the statement's schema (`current_schema()`, a tenant view's
 * schema once qualified) whose statistics are stale — changed by more than 1,000 rows plus a fifth of their estimated
 * size since their last analyze (autovacuum analyzes at 50 plus a tenth: this finds only a table it has fallen well
 * behind on). A `text[]`; also read by the tenant fleet's check (`tenantWork.check`).
 *
 * @since 0.8.0
 */
export const staleTables = `ARRAY(SELECT t.relname::text FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = current_schema() AND t.relname IN (${[...queueTables].map((table) => `'${table}'`).join(", ")})
      AND pg_stat_get_mod_since_analyze(t.oid) > 1000 + 0.2 * greatest(t.reltuples, 0))`

/**
 * The queue tables whose statistics are stale ({@link staleTables}).
 *
 * @category operations
 * @since 0.5.0
 */
export const staleStatistics = Operation.findAll({
  name: "queueVacuum.staleStatistics",
  Row: Schema.Struct({ table: Schema.String }),
  sql: `SELECT unnest(${staleTables}) AS table`
})

/**
 * Analyzes these tables (of {@link queueTables}: the text names them as given), skipping one another session is
 * analyzing or vacuuming (two worker processes finding the same stale table: the second used to wait for the first,
 * then analyze it again).
 *
 * @category operations
 * @since 0.5.0
 */
export const analyze = Operation.void({
  name: "queueVacuum.analyze",
  sql: (r: { readonly tables: ReadonlyArray<string> }) => `ANALYZE (SKIP_LOCKED) ${r.tables.join(", ")}`
})
