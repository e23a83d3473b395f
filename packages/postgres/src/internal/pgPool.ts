/**
 * The pg side of a client: its connection settings, its pool (held in the scope, ended when it closes), and
 * connections opened outside the pool with the same settings.
 *
 * @internal
 */
import { Effect, type Scope } from "effect"
import pg from "pg"
import { fromCause, type PostgresError } from "../PostgresError.js"
import type * as ConnectionOptions from "./connectionOptions.js"
import * as Identifier from "./identifier.js"

/**
 * pg's settings for the options: every connection starts on `decoded.schema`, JIT off unless asked for, and with
 * `plan_cache_mode = force_generic_plan` when `genericPlans` (see `PgClient.dedicated`).
 */
export const config = (decoded: ConnectionOptions.Decoded): pg.PoolConfig => ({
  connectionString: decoded.connectionString,
  max: decoded.maxConnections,
  connectionTimeoutMillis: decoded.connectTimeoutMillis,
  idleTimeoutMillis: decoded.idleTimeoutMillis,
  application_name: decoded.applicationName,
  options: `-c search_path=${Identifier.quote(decoded.schema)}${decoded.jit ? "" : " -c jit=off"}${decoded.genericPlans === true ? " -c plan_cache_mode=force_generic_plan" : ""}`
})

/** A pool in the current scope (connections are made lazily). */
export const acquire = (config: pg.PoolConfig): Effect.Effect<pg.Pool, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const pool = new pg.Pool(config)
      // An idle client whose connection drops emits 'error' on the pool; unhandled, it would crash the process.
      // The next checkout simply gets a fresh connection.
      pool.on("error", () => undefined)
      return pool
    }),
    (pool) => Effect.promise(() => pool.end())
  )

/** Opens a connection outside the pool; the caller ends it. */
export const connect = (config: pg.PoolConfig): Effect.Effect<pg.Client, PostgresError> =>
  Effect.tryPromise({
    try: () => {
      const client = new pg.Client(config)
      return client.connect().then(
        () => client,
        (error) => {
          client.end().catch(() => undefined)
          throw error
        }
      )
    },
    catch: (cause) => fromCause(cause)
  })
