/**
 * The one Postgres client of a service: a `pg.Pool` held as a scoped resource (ended when the layer's scope
 * closes), bound to one service schema, with typed errors and transactions carried in fiber context.
 *
 * **When to use**: every Postgres layer of Whizbang depends on `PgClient`; build it once per service with
 * `PgClient.layer({ url, schema })` or `PgClient.layerConfig` (`DATABASE_URL`, optional `WHIZBANG_SCHEMA`).
 *
 * **Transactions**: `withTransaction(effect)` checks out one connection, runs `BEGIN`, provides the transaction
 * to `effect`'s fiber context, and commits on success or rolls back on failure, defect and interruption; the
 * connection is always released. Every `query`/`drizzle` call inside `effect` (however deeply nested, also in
 * forked child fibers, which inherit the context) runs on that connection. A nested `withTransaction` opens a
 * SAVEPOINT: its failure rolls back only its own work, and the outer transaction may recover and commit.
 *
 * **Gotchas**
 * - Each connection's `search_path` is the service schema alone (set as a startup option, so it holds before
 *   the first statement). An `options=` parameter in the URL overrides it: don't put one there.
 * - Statements of one transaction share a connection: running them concurrently (`Effect.all` with
 *   concurrency) queues them, and concurrent nested transactions on one transaction are not supported.
 * - An interrupted `query` is cancelled on the server; a `drizzle` callback is a plain promise and is not.
 * - `bigint` columns come back from raw `query` as strings (pg's default); drizzle tables map them to numbers.
 *
 * @since 0.1.0
 */
import { drizzle as makeDrizzle, type NodePgDatabase } from "drizzle-orm/node-postgres"
import { Config, Context, Duration, Effect, Layer, Option, Redacted, type Scope } from "effect"
import pg from "pg"
import * as Identifier from "./Identifier.js"
import * as Connection from "./internal/connection.js"
import * as Transaction from "./internal/transaction.js"
import { fromCause, type PostgresConfigError, type PostgresError } from "./PostgresError.js"
import * as Tables from "./Tables.js"

/**
 * @category models
 * @since 0.1.0
 */
export interface Options {
  readonly url: string | Redacted.Redacted<string>
  /** The service schema; default `whizbang`. Validated: `/^[a-z_][a-z0-9_]{0,62}$/`, not `pg_*`. */
  readonly schema?: string | undefined
  /** Pool size; default 10. */
  readonly maxConnections?: number | undefined
  /** How long to wait for a connection (new or from the pool); default 10 seconds. */
  readonly connectTimeout?: Duration.Input | undefined
  /** Idle connections are closed after this; default 30 seconds. */
  readonly idleTimeout?: Duration.Input | undefined
  readonly applicationName?: string | undefined
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  /** The validated service schema every connection is bound to. */
  readonly schema: string
  /** The drizzle tables of `schema`. */
  readonly tables: Tables.Tables
  /** The underlying pool, for what needs a dedicated connection (LISTEN). Prefer `query`. */
  readonly pool: pg.Pool
  /** Runs one statement; every value is a bound parameter (`$1`, `$2`, ...). */
  readonly query: <Row extends object = Record<string, unknown>>(
    sql: string,
    params?: ReadonlyArray<unknown>
  ) => Effect.Effect<ReadonlyArray<Row>, PostgresError>
  /** Runs a drizzle query on the current transaction's connection, or on the pool outside one. */
  readonly drizzle: <A>(f: (db: NodePgDatabase) => PromiseLike<A>) => Effect.Effect<A, PostgresError>
  /** Runs `effect` in a transaction (a savepoint when already inside one). */
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | PostgresError, R>
}

/**
 * @category services
 * @since 0.1.0
 */
export class PgClient extends Context.Service<PgClient, Shape>()("@whizbang/postgres/PgClient") {}

/**
 * Validates the options and opens the pool in the current scope (connections are made lazily).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: Options): Effect.Effect<Shape, PostgresConfigError, Scope.Scope> =>
  Effect.gen(function*() {
    const schema = yield* Identifier.validateSchema(options.schema ?? "whizbang", "schema")
    const config: pg.PoolConfig = {
      connectionString: Redacted.isRedacted(options.url) ? Redacted.value(options.url) : options.url,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: Duration.toMillis(options.connectTimeout ?? Duration.seconds(10)),
      idleTimeoutMillis: Duration.toMillis(options.idleTimeout ?? Duration.seconds(30)),
      application_name: options.applicationName ?? "whizbang",
      options: `-c search_path=${Identifier.quote(schema)}`
    }
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const pool = new pg.Pool(config)
        // An idle client whose connection drops emits 'error' on the pool; unhandled, it would crash the process.
        // The next checkout simply gets a fresh connection.
        pool.on("error", () => undefined)
        return pool
      }),
      (pool) => Effect.promise(() => pool.end())
    )
    const poolDb = makeDrizzle(pool)

    const query = <Row extends object>(sql: string, params?: ReadonlyArray<unknown>) =>
      Transaction.withConnection(pool, (connection) => Connection.run<Row>(connection, config, sql, params))

    const drizzle = <A>(f: (db: NodePgDatabase) => PromiseLike<A>) =>
      Effect.flatMap(Transaction.currentClient(pool), (client) =>
        Effect.tryPromise({
          try: () => f(Option.isSome(client) ? makeDrizzle(client.value) : poolDb),
          catch: (cause) => fromCause(cause)
        }))

    const statement = (connection: Connection.Connection, sql: string) =>
      Effect.asVoid(Connection.run(connection, config, sql))

    const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | PostgresError, R> =>
      Transaction.withTransaction(pool, statement, effect)

    return PgClient.of({ schema, tables: Tables.make(schema), pool, query, drizzle, withTransaction })
  })

/**
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<PgClient, PostgresConfigError> => Layer.effect(PgClient, make(options))

/**
 * Reads `DATABASE_URL` (redacted) and `WHIZBANG_SCHEMA` (default `whizbang`) from the `ConfigProvider`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConfig = (
  options: Omit<Options, "url" | "schema"> = {}
): Layer.Layer<PgClient, PostgresConfigError | Config.ConfigError> =>
  Layer.effect(
    PgClient,
    Effect.gen(function*() {
      const url = yield* Config.Redacted("DATABASE_URL")
      const schema = yield* Config.String("WHIZBANG_SCHEMA").pipe(Config.withDefault("whizbang"))
      return yield* make({ ...options, url, schema })
    })
  )

/**
 * `query` of the `PgClient` in context.
 *
 * @category accessors
 * @since 0.1.0
 */
export const query = <Row extends object = Record<string, unknown>>(
  sql: string,
  params?: ReadonlyArray<unknown>
): Effect.Effect<ReadonlyArray<Row>, PostgresError, PgClient> =>
  Effect.flatMap(Effect.service(PgClient), (client) => client.query<Row>(sql, params))

/**
 * `withTransaction` of the `PgClient` in context.
 *
 * @category accessors
 * @since 0.1.0
 */
export const withTransaction = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | PostgresError, R | PgClient> =>
  Effect.flatMap(Effect.service(PgClient), (client) => client.withTransaction(effect))
