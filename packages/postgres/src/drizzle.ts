/**
 * `@whizbang/postgres/drizzle`: the drizzle tables of Whizbang's `wh_` tables and drizzle queries on the service's
 * `PgClient`. The main entry never imports drizzle-orm (an app type-checks and runs without it); import this entry
 * only with `drizzle-orm` installed.
 *
 * @since 0.5.0
 */

/**
 * @since 0.5.0
 */
export * as PgDrizzle from "./PgDrizzle.js"

/**
 * @since 0.1.0
 */
export * as Tables from "./Tables.js"
