/**
 * The statements Whizbang's other packages run against its `wh_` tables, as typed operations: each pairs one
 * statement with its request type and the schema of its rows, which are decoded, never asserted. The stream
 * locker (`@whizbang/stream-locker`), read-your-writes (`@whizbang/sync`), the operator's CLI (`@whizbang/cli`) and
 * the test awaiters (`@whizbang/testing`) call these and hold no SQL of their own, so a table's columns are named in one package (and spelled once, in an internal registry the drizzle
 * schema is checked against).
 *
 * Internal (`@whizbang/postgres/internal`, no semver guarantees): tooling of your own that needs what `whizbang`
 * CLI commands do (an admin UI listing dead letters, a script force-releasing locks) uses `@whizbang/cli`'s
 * operations (`DeadLetters`, `Locks`, ...) without shelling out; an app's code reads its read models through
 * lenses.
 *
 * ```ts
 * const client = yield* PgClient.PgClient
 * const letters = yield* PgOperations.DeadLetters.list(client, { perspectiveName: null, limit: 100 })
 * ```
 *
 * **Gotchas**
 * - An operation runs on the client given: inside `client.withTransaction(...)` it runs on the transaction.
 * - A row that does not decode (a schema of another release) fails with a `PostgresError` whose reason is
 *   `UnexpectedRow`, naming the operation.
 * - These are database-level steps, not workflows: `PgOperations.Rebuilds` deletes and re-enqueues, but the
 *   checks (the version registered and live, the event types handled) are the CLI's `Rewind.rebuild`.
 *
 * @since 0.5.0
 */

/**
 * @category models
 * @since 0.5.0
 */
export type { Operation } from "./operation.js"

/**
 * Acquire, renew, release and fence stream locks; force-release them.
 *
 * @since 0.5.0
 */
export * as StreamLocks from "../sql/streamLocks.js"

/**
 * Cursors flagged RewindRequired: the debounce, the start-up scan, the trigger, the completion; flagging.
 *
 * @since 0.5.0
 */
export * as Rewinds from "../sql/rewinds.js"

/**
 * One stream's replay for one perspective: its events, the covered work, the model row.
 *
 * @since 0.5.0
 */
export * as Replays from "../sql/replays.js"

/**
 * A new perspective's history: the streams, the locked placeholder cursor.
 *
 * @since 0.5.0
 */
export * as Bootstraps from "../sql/bootstraps.js"

/**
 * One (stream, perspective)'s cursor, purged.
 *
 * @since 0.5.0
 */
export * as Purges from "../sql/purges.js"

/**
 * An in-place rebuild of a perspective version, batch by batch.
 *
 * @since 0.5.0
 */
export * as Rebuilds from "../sql/rebuilds.js"

/**
 * Dead letters: list, show, retry, discard.
 *
 * @since 0.5.0
 */
export * as DeadLetters from "../sql/deadLetters.js"

/**
 * Cursors flagged Failed, where each is stopped.
 *
 * @since 0.5.0
 */
export * as FailedCursors from "../sql/failedCursors.js"

/**
 * Pending work by perspective, and its removal.
 *
 * @since 0.5.0
 */
export * as Work from "../sql/work.js"

/**
 * The perspective versions registry as an operator reads it.
 *
 * @since 0.5.0
 */
export * as Registry from "../sql/registry.js"

/**
 * Read-your-writes: what the database knows about whether a perspective processed some events (decoded facts,
 * batched for many waits), the rule that reads them, and cross-scope discovery of pending events.
 *
 * @since 0.5.0
 */
export * as SyncInquiry from "../sql/syncInquiry.js"

/**
 * The schemas of the database that hold Whizbang tables.
 *
 * @since 0.5.0
 */
export * as Schemas from "../sql/schemas.js"

/**
 * The health of many tenant schemas in one statement per batch: pending work, lag, dead letters.
 *
 * @since 0.6.0
 */
export * as TenantHealth from "../sql/tenantHealth.js"

/**
 * Whether a tenant has anything for a worker, and whether another process runs its work already (the tenant fleet's
 * check).
 *
 * @since 0.6.0
 */
export * as TenantWork from "../sql/tenantWork.js"

/**
 * The queue's upkeep: its vacuum, and the analyze of queue tables whose statistics are stale (the tenant fleet runs
 * it before a tenant's worker claims over them).
 *
 * @since 0.8.0
 */
export * as QueueVacuum from "../sql/queueVacuum.js"

/**
 * What a test waiting for perspectives across processes asks (`@whizbang/testing`'s `MultiHostPerspectiveAwaiter`).
 *
 * @since 0.6.0
 */
export * as Awaits from "../sql/awaits.js"
