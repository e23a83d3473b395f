/**
 * Upkeep of the work queue: the worker vacuums its own queue tables as it empties them.
 *
 * Every applied work row is deleted from `wh_perspective_events`, and every claim inserts and removes rows of
 * `wh_active_streams`. A deleted row stays in the table and in its indexes until `VACUUM`. The claim walks its
 * index from the oldest event, and each stream's lookup passes that stream's deleted rows, so until a vacuum
 * every cycle costs a little more than the one before. Autovacuum may come late (each table is visited once a
 * minute by default, and only once a fifth of it is dead), and some servers run without it.
 *
 * So each coordinator counts the work rows its completions removed. Once every `everyRows` (default 100,000) it
 * runs `VACUUM (SKIP_LOCKED, TRUNCATE false) wh_perspective_events, wh_active_streams` in the background. The
 * worker's cycles go on meanwhile: this `VACUUM` takes no lock that appends, claims or completions wait for. At most
 * one runs per pool (a process's tenants share one worker pool), and `SKIP_LOCKED` skips a table that another
 * instance or autovacuum is vacuuming.
 * `TRUNCATE false`: giving the emptied end of the table back to the system takes a lock that stops every statement
 * on it. A queue's table is emptied and refilled all the time, so those pages are reused instead.
 *
 * Measured with bench scenario d, 1,000,000 events over 100,000 streams (worker in its own process, one run each),
 * as the cost per event of the last tenth over the first:
 * - PostgreSQL 15 with autovacuum off: 1.26x without this, 1.00x with it.
 * - Embedded PostgreSQL 17 with autovacuum on: 1.60x and 1.64x without it, 0.92x with it.
 * - With truncation allowed, three tenths took 1.7-5.3x as long as the rest.
 *
 * A failed vacuum is logged as a warning and tried again after the next `everyRows`; nothing else depends on it.
 * A role that does not own the tables gets PostgreSQL's warning and no vacuum. `queueVacuum: false` turns it off
 * (for a server whose autovacuum is tuned for the queue).
 *
 * @since 0.4.0
 */
import { OutageLog } from "@whizbang/core/internal"
import { Effect } from "effect"
import type { Shape as PgClientShape } from "./PgClient.js"
import { PostgresConfigError } from "./PostgresError.js"
import * as Transaction from "./internal/transaction.js"
import * as Sql from "./sql/queueVacuum.js"

/**
 * The option as given: `false` (off), or how many removed work rows between two vacuums.
 *
 * @category models
 * @since 0.4.0
 */
export type Input = false | { readonly everyRows?: number | undefined } | undefined

/**
 * Default number of removed work rows between two vacuums of the queue tables.
 *
 * @category constants
 * @since 0.4.0
 */
export const defaultEveryRows = 100_000

/**
 * Validates the option: `false`, or `everyRows` a positive integer; else a `PostgresConfigError` naming it.
 * Returns the number of rows between vacuums, or `null` when off.
 *
 * @category constructors
 * @since 0.4.0
 */
export const decode = (input: Input): Effect.Effect<number | null, PostgresConfigError> => {
  if (input === false) return Effect.succeed(null)
  if (input !== undefined && (typeof input !== "object" || input === null)) {
    return Effect.fail(
      new PostgresConfigError({ option: "queueVacuum", message: `queueVacuum must be false or { everyRows }, got ${String(input)}` })
    )
  }
  const everyRows = input?.everyRows ?? defaultEveryRows
  if (!Number.isSafeInteger(everyRows) || everyRows < 1) {
    return Effect.fail(
      new PostgresConfigError({
        option: "queueVacuum.everyRows",
        message: `queueVacuum.everyRows must be a positive integer, got ${String(everyRows)}`
      })
    )
  }
  return Effect.succeed(everyRows)
}

/**
 * The statement: both queue tables, skipping a table another session is vacuuming, never truncating.
 *
 * @internal
 */
export const statement = Sql.vacuum.sql as string

/** How often, at most, a claiming coordinator looks for stale statistics of its queue tables. @internal */
export const statisticsCheckMillis = 10_000

/** The pools a vacuum of the queue runs on now (one at a time per pool, whatever the coordinators on it). */
const vacuuming = new WeakSet<object>()

/**
 * The counter of one coordinator: `removed(n)` after each completion; it starts a vacuum in the background when
 * `everyRows` were removed since the last one and none is running on the coordinator's pool (a process serving many
 * tenants has one coordinator per tenant on one worker pool: one vacuum at a time for all of them). `null`: never.
 *
 * `claimed` after each claim that took as many streams as it asked for (a backlog: a claim of a tenant with a
 * few streams of work never pays it): at most every {@link statisticsCheckMillis}, it looks in the
 * background for queue tables with stale statistics and analyzes them. Autovacuum visits each table of a database
 * in turn, so with thousands of tables (a schema per tenant) it comes late: measured in bench t (1,001 tenant
 * schemas), a tenant's active streams and cursors were still never analyzed minutes after 200,000 work rows
 * arrived, and its claim planned for empty tables ran for 2-3 minutes. Off with the vacuum (`queueVacuum: false`).
 *
 * @internal
 */
export const make = (client: PgClientShape, everyRows: number | null) => {
  let removedSince = 0
  // One vacuum at a time per pool: a process serving many tenants has a coordinator per tenant on one worker pool.
  const pool: object = client.pool ?? client
  let lastStatisticsCheck = Number.NEGATIVE_INFINITY
  let analyzing = false
  const statisticsOutages = OutageLog.unsafeMake("analyze of the work queue's tables")
  const analyze = Effect.gen(function* () {
    const stale = (yield* Sql.staleStatistics(client)).map((r) => r.table).filter((t) => Sql.queueTables.has(t))
    if (stale.length === 0) return
    const started = Date.now()
    yield* Sql.analyze(client, { tables: stale })
    yield* Effect.logDebug(`queue tables analyzed (${stale.join(", ")}) in ${Date.now() - started} ms`)
  }).pipe(
    (attempt) => statisticsOutages.guard(attempt, undefined),
    Effect.ensuring(
      Effect.sync(() => {
        analyzing = false
      })
    )
  )
  // A failure (a database outage) is logged once, and once more when a vacuum works again; autovacuum still applies.
  const outages = OutageLog.unsafeMake("vacuum of the work queue's tables")
  const vacuum = Effect.gen(function* () {
    const started = Date.now()
    yield* Sql.vacuum(client)
    yield* Effect.logDebug(`queue tables vacuumed in ${Date.now() - started} ms`)
  }).pipe(
    (attempt) => outages.guard(attempt, undefined),
    Effect.ensuring(
      Effect.sync(() => {
        vacuuming.delete(pool)
      })
    )
  )
  return {
    claimed: Effect.suspend(() => {
      if (everyRows === null || analyzing) return Effect.void
      const now = Date.now()
      if (now - lastStatisticsCheck < statisticsCheckMillis) return Effect.void
      lastStatisticsCheck = now
      analyzing = true
      return Effect.asVoid(Effect.forkDetach(Transaction.outside(analyze)))
    }),
    removed: (rows: number): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (everyRows === null) return Effect.void
        removedSince += rows
        if (vacuuming.has(pool) || removedSince < everyRows) return Effect.void
        removedSince = 0
        vacuuming.add(pool)
        // Never on a caller's transaction (VACUUM cannot run in one, and the transaction may end first).
        return Effect.asVoid(Effect.forkDetach(Transaction.outside(vacuum)))
      })
  }
}
