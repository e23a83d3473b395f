/**
 * Test helpers for Whizbang: a real PostgreSQL for every run, a fresh database for every test file, and awaiters
 * that let a test go on exactly when a message was appended, a lifecycle stage fired, or perspectives on any
 * host processed events.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as TestDatabase from "./TestDatabase.js"
/** @since 0.1.0 */
export * as TestPostgres from "./TestPostgres.js"
/** @since 0.1.0 */
export * as TestPostgresError from "./TestPostgresError.js"
/** @since 0.1.0 */
export * as EventStoreContract from "./EventStoreContract.js"
/** @since 0.1.0 */
export * as PgTestDatabase from "./PgTestDatabase.js"
/** @since 0.2.0 */
export * as AwaiterTimeoutError from "./AwaiterTimeoutError.js"
/** @since 0.2.0 */
export * as LifecycleStageAwaiter from "./LifecycleStageAwaiter.js"
/** @since 0.2.0 */
export * as MessageAwaiter from "./MessageAwaiter.js"
/** @since 0.2.0 */
export * as MultiHostPerspectiveAwaiter from "./MultiHostPerspectiveAwaiter.js"
