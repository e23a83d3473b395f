/**
 * Test helpers for Whizbang: a real PostgreSQL for every run and a fresh database for every test file.
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
