/**
 * The one Postgres client of a service: a `pg.Pool` held as a scoped resource (ended when the layer's scope
 * closes), bound to one service schema, with typed errors and transactions carried in fiber context.
 *
 * **When to use**: every Postgres layer of Whizbang depends on `PgClient`; build it once per service with
 * `PgClient.layer({ url, schema })` or `PgClient.layerConfig` (`DATABASE_URL`, optional `WHIZBANG_SCHEMA`).
 *
 * **Transactions**: `withTransaction(effect)` checks out one connection, runs `BEGIN`, provides the transaction
 * to `effect`'s fiber context, and commits on success or rolls back on failure, defect and interruption; the
 * connection is always released. Every `query` inside `effect` (however deeply nested, also in forked child
 * fibers, which inherit the context) runs on that connection, and so does `PgDrizzle.run` of the opt-in
 * `@whizbang/postgres/drizzle` entry. A nested `withTransaction` opens a
 * SAVEPOINT: its failure rolls back only its own work, and the outer transaction may recover and commit.
 *
 * **Gotchas**
 * - Each connection's `search_path` is the service schema alone, and JIT compilation is off unless `jit: true`
 *   (both set as startup options, so they hold before the first statement). An `options=` parameter in the URL
 *   overrides them: don't put one there.
 * - Statements of one transaction share a connection: running them concurrently (`Effect.all` with
 *   concurrency) queues them, and concurrent nested transactions on one transaction are not supported.
 * - An interrupted `query` is cancelled on the server.
 * - `bigint` columns come back from raw `query` as strings (pg's default).
 * - Nothing here imports drizzle-orm: the drizzle tables of the `wh_` tables and a drizzle runner on this client's
 *   transactions are the `@whizbang/postgres/drizzle` entry, for apps that install drizzle-orm.
 * - The options are validated before the pool exists (`decodeOptions`): the URL must name a host and a database,
 *   since pg would otherwise fill them from `PGHOST`/`PGDATABASE` and a service could migrate a database nobody named.
 * - `listen(channel)` is a `Stream` of the channel's notifications for this schema. Every channel and subscriber of
 *   a client (and of its `dedicated` clients) share ONE connection, opened outside the pool by the first subscriber,
 *   ended after the last one, re-opened with capped backoff when it dies: `maxConnections` is all for statements.
 * - Statements of a fixed text that run all the time (the worker's cycle, read-your-writes checks, appends) are
 *   prepared once per connection (`QueryOptions.prepared`); `preparedStatements: false` turns that off for poolers
 *   that cannot keep them.
 * - The perspective worker runs its statements on a pool of its own (`dedicated`, sized by the worker:
 *   `maxConcurrentDrainConsumers + 2`), so a burst of requests on this pool never queues the worker behind it.
 *
 * @since 0.1.0
 */
import { Config, Context, type Duration, Effect, Layer, type Redacted, type Scope, Stream, SubscriptionRef } from "effect"
import type pg from "pg"
import * as Connection from "./internal/connection.js"
import * as ConnectionOptions from "./internal/connectionOptions.js"
import * as DedicatedPool from "./internal/dedicatedPool.js"
import * as ListenConnection from "./internal/listenConnection.js"
import * as PgPool from "./internal/pgPool.js"
import * as QualifiedStatement from "./internal/qualifiedStatement.js"
import * as SearchPath from "./internal/searchPath.js"
import * as SchemaStatements from "./internal/schemaStatements.js"
import * as StatementName from "./internal/statementName.js"
import * as Transaction from "./internal/transaction.js"
import type { PostgresConfigError, PostgresError } from "./PostgresError.js"

/**
 * @category models
 * @since 0.1.0
 */
export interface Options {
  readonly url: string | Redacted.Redacted<string>
  /** The service schema; default `whizbang`. Validated: `/^[a-z_][a-z0-9_]{0,62}$/`, not `pg_*`. */
  readonly schema?: string | undefined
  /**
   * Pool size, an integer >= 1; default 10. The LISTEN connection (one, shared by every channel, while anything
   * listens) is opened outside the pool, so the server sees up to `maxConnections` + 1 connections per client.
   */
  readonly maxConnections?: number | undefined
  /** How long to wait for a connection (new or from the pool); default 10 seconds. */
  readonly connectTimeout?: Duration.Input | undefined
  /** Idle connections are closed after this; default 30 seconds. */
  readonly idleTimeout?: Duration.Input | undefined
  /** Shown in `pg_stat_activity.application_name`; 1 to 63 printable ASCII characters; default `whizbang`. */
  readonly applicationName?: string | undefined
  /**
   * Run the statements asked for as prepared (`query(sql, params, { prepared: true })`: the worker's and the
   * read-your-writes inquiry's, each parsed once per connection instead of at every call, and planned once where
   * PostgreSQL settles on a generic plan or the pool asks for them, see `dedicated`); default
   * `true`. Set `false` behind a pooler that cannot keep prepared statements (PgBouncer in transaction mode before
   * 1.21, or without `max_prepared_statements`).
   */
  readonly preparedStatements?: boolean | undefined
  /**
   * Let Postgres JIT-compile this pool's statements; default `false` (`jit=off` for its sessions, set at connect).
   * Whizbang's statements are short; the planner's estimates for its registry listing (a few ms of work) passed
   * `jit_above_cost`, and compiling took 370-560 ms each time the build loop ran it, every second. Set `true` to keep
   * the server's setting, e.g. for analytical queries of your own through this client.
   */
  readonly jit?: boolean | undefined
}

/**
 * Options of one statement.
 *
 * @category models
 * @since 0.3.0
 */
export interface QueryOptions {
  /**
   * Prepare the statement (named after its text) on the connection the first time it runs there, and run it by name
   * afterwards: Postgres parses it once per connection and may keep its plan. For statements whose text is one of a
   * fixed set (never text built from data), since a connection keeps every statement it prepared. Ignored when the
   * client was made with `preparedStatements: false`.
   */
  readonly prepared?: boolean | undefined
  /**
   * Whizbang's own statements: on a view of another schema than the client's own (`forSchema`), every `wh_`
   * relation and function of the text is named schema-qualified before it runs, so the statement needs no
   * `SET search_path` on a connection last used for another schema. Texts that cannot be rewritten (schema changes,
   * dollar-quoted bodies) run as without it. Not for statements naming relations other than Whizbang's.
   *
   * @internal
   */
  readonly qualified?: boolean | undefined
}

/**
 * `{ prepared: true }`: the options of a statement of fixed text that runs all the time
 * (`client.query(sql, params, PgClient.prepared)`).
 *
 * @category models
 * @since 0.3.0
 */
export const prepared: QueryOptions = { prepared: true }

/**
 * Validates the options without connecting: the URL must be a `postgres://` (or `postgresql://`) URL naming a
 * host and a database (no fallback to `PGHOST`/`PGDATABASE`), the schema a valid identifier, `maxConnections`
 * an integer >= 1, the timeouts finite positive durations, `applicationName` printable ASCII of at most 63
 * characters. Fails with a `PostgresConfigError` naming the option (`urlOption` names the URL setting).
 *
 * @category constructors
 * @since 0.1.0
 */
export const decodeOptions = (
  options: Omit<Options, "url"> & { readonly url: unknown },
  urlOption = "url"
): Effect.Effect<Decoded, PostgresConfigError> => ConnectionOptions.decode(options, { url: urlOption })

/**
 * The options as {@link decodeOptions} leaves them.
 *
 * @category models
 * @since 0.5.0
 */
export interface Decoded extends ConnectionOptions.Decoded {}

/**
 * A server session (see `Shape.listenSession`): its backend pid, the backend's start and the server's start, both
 * in microseconds since the epoch, as text.
 *
 * @category models
 * @since 0.6.0
 */
export interface ListenSession extends ListenConnection.Session {}

/**
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  /** The validated service schema every connection is bound to. */
  readonly schema: string
  /** The underlying pool. Prefer `query`. */
  readonly pool: pg.Pool
  /**
   * Opens a connection outside the pool, with the pool's settings, for what holds one for long: such a
   * connection never takes a pool slot, so `maxConnections` is all for statements. The caller ends it.
   */
  readonly connect: Effect.Effect<pg.Client, PostgresError>
  /**
   * The notifications of `channel` (a plain identifier, else the stream dies) whose payload names this client's
   * schema: each element is the payload's detail after `<schema>\n`, or `undefined` for a bare schema. `undefined`
   * also comes first, once the channel is LISTENed, and after every reconnect (notifications sent while disconnected
   * are lost): read it as "something may have changed". Subscribers of every channel share one connection, opened
   * for the first and ended after the last; a lost connection is re-opened with capped exponential backoff (100 ms
   * doubling to 5 s), logged as one warning per outage and one line when it is back. Never fails.
   */
  readonly listen: (channel: string) => Stream.Stream<string | undefined>
  /**
   * The notifications of `channel` for every schema, on the same connection as `listen`: each element is the whole
   * payload (`<schema>` or `<schema>\n<detail>`), `undefined` as for `listen`. For what serves many schemas at once
   * (the tenant fleet finding the tenants with work).
   */
  readonly listenAll: (channel: string) => Stream.Stream<string | undefined>
  /**
   * The server session of the LISTEN connection: the current one (`undefined` while none is open), then each
   * change (opened, lost, re-opened). The instance registry records it, so that other instances can tell at once
   * when this process is gone (its session ends with it) instead of waiting out the heartbeat threshold.
   */
  readonly listenSession: Stream.Stream<ListenSession | undefined>
  /** Runs one statement; every value is a bound parameter (`$1`, `$2`, ...). */
  readonly query: <Row extends object = Record<string, unknown>>(
    sql: string,
    params?: ReadonlyArray<unknown>,
    options?: QueryOptions
  ) => Effect.Effect<ReadonlyArray<Row>, PostgresError>
  /** Runs `effect` in a transaction (a savepoint when already inside one). */
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | PostgresError, R>
  /**
   * A client with a pool of its own (same URL, schema, timeouts and application name), ended with the current
   * scope: for a background loop that must not queue behind request traffic (the perspective worker). Its
   * transactions are its own: a statement of this client never runs on a transaction of the other, and back.
   * `maxConnections` must be an integer >= 1 and `genericPlans` true or false (else a `PostgresConfigError` naming
   * it). `genericPlans: true` starts
   * its connections with `plan_cache_mode = force_generic_plan`: a prepared statement is planned once per
   * connection instead of at every execution — for a pool that runs only statements of fixed shape whose best plan
   * does not depend on their parameters' values (the worker's claims and completions: PostgreSQL kept planning the
   * claim afresh at every execution, 25-45 ms each on a loaded 2-core machine). A view bound to another schema
   * (`forSchema`) shares one pool among its tenants' workers and replays, and plans as usual. Not for Citus: its
   * coordinator cannot plan the worker's claim generically and refuses every execution ("could not create
   * distributed plan", SQLSTATE 0A000).
   */
  readonly dedicated: (options: {
    readonly maxConnections: number
    readonly genericPlans?: boolean | undefined
  }) => Effect.Effect<Shape, PostgresConfigError, Scope.Scope>
  /**
   * The same client bound to another schema (a tenant's): its statements run on this client's pool, each
   * connection moved to `schema` (one `SET search_path` when a checkout finds it on another schema, none per
   * statement) — except Whizbang's own statements (`QueryOptions.qualified`), which name the schema themselves and
   * run on a connection wherever it is; its `listen` delivers `schema`'s notifications; its `dedicated` is one pool
   * shared by every view of this client (made by the first view that asks, sized by the largest request, ended with this client), so the connections
   * of a process do not grow with its tenants. A statement of one view inside another view's transaction is a
   * defect: one transaction serves one schema. `schema` must be a schema name validated already
   * (`Identifier.validateSchema`).
   */
  readonly forSchema: (schema: string) => Shape
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
  Effect.flatMap(decodeOptions(options), (decoded) => fromDecoded(decoded))

const fromDecoded = (
  decoded: ConnectionOptions.Decoded,
  /** The LISTEN side of the client this one is `dedicated` to: one LISTEN connection for both. */
  shared?: ListenConnection.ListenSide
): Effect.Effect<Shape, never, Scope.Scope> =>
  Effect.gen(function* () {
    const initial = decoded.schema
    const config = PgPool.config(decoded)
    const pool = yield* PgPool.acquire(config)
    const statement = (connection: Connection.Connection, sql: string) => Effect.asVoid(Connection.run(connection, config, sql))
    const connect = PgPool.connect(config)
    const side = shared ?? (yield* ListenConnection.make(connect))
    const listen = side.listen
    const sharedDedicated = yield* DedicatedPool.make((maxConnections) => fromDecoded({ ...decoded, maxConnections }, side))

    const view = (schema: string, bound: boolean): Shape => {
      // Assigned once below; read lazily by `forSchema` (the view of its own schema is itself).
      let self: Shape
      const target: Transaction.Target = {
        pool,
        schema,
        prepare: (connection) => SearchPath.ensure(connection, config, initial, schema)
      }
      // Whizbang's own statements as this view runs them, schema-qualified (`qualifiedStatement.ts`), by their text.
      const qualifiedTexts = new Map<string, string>()
      const qualifiedFor = (rewritten: string): string => {
        let text = qualifiedTexts.get(rewritten)
        if (text === undefined) {
          if (qualifiedTexts.size >= 2_000) qualifiedTexts.clear()
          qualifiedTexts.set(rewritten, (text = QualifiedStatement.forSchema(rewritten, schema)))
        }
        return text
      }
      /** Runs `sql` on a connection moved to this view's schema, or on any connection when `anySchema` (qualified). */
      const run = <Row extends object>(sql: string, params: ReadonlyArray<unknown> | undefined, prepared: boolean, anySchema: boolean) =>
        Transaction.withConnection(
          target,
          (connection) => {
            if (!(decoded.preparedStatements && prepared)) return Connection.run<Row>(connection, config, sql, params)
            if (schema === initial) return Connection.run<Row>(connection, config, sql, params, StatementName.of(sql))
            // A tenant's own name, so its plans survive the connection serving other tenants in between.
            const name = SchemaStatements.nameOf(sql, schema, initial)
            return Effect.andThen(
              SchemaStatements.use(connection, config, name),
              SchemaStatements.run<Row>(connection, config, sql, params, name)
            )
          },
          anySchema
        )
      const query = <Row extends object>(sql: string, params?: ReadonlyArray<unknown>, options?: QueryOptions) => {
        const prepared = options?.prepared === true
        // Only a view of another schema than the pool's own rewrites: a single-schema service's statements run as written.
        const rewritten = options?.qualified === true && schema !== initial ? QualifiedStatement.qualify(sql) : undefined
        return rewritten === undefined ? run<Row>(sql, params, prepared, false) : run<Row>(qualifiedFor(rewritten), params, prepared, true)
      }
      const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | PostgresError, R> =>
        Transaction.withTransaction(target, statement, effect)
      const dedicated = (own: { readonly maxConnections: number; readonly genericPlans?: boolean | undefined }) =>
        Effect.gen(function* () {
          const maxConnections = yield* ConnectionOptions.decodePoolSize("maxConnections", own.maxConnections)
          const genericPlans = yield* ConnectionOptions.decodeFlag("genericPlans", own.genericPlans, false)
          return yield* bound
            ? Effect.map(sharedDedicated(maxConnections), (client) => client.forSchema(schema))
            : fromDecoded({ ...decoded, maxConnections, genericPlans }, side)
        })
      self = PgClient.of({
        schema,
        pool,
        connect,
        listen: (channel) => listen(channel, schema),
        listenAll: (channel) => listen(channel, undefined),
        listenSession: SubscriptionRef.changes(side.session),
        query,
        withTransaction,
        dedicated,
        // A view of its own schema is itself; the client's own schema asked of the client gives a view too, so its
        // `dedicated` is the shared pool like every tenant's.
        forSchema: (other) => (other === schema && bound ? self : view(other, true))
      })
      return self
    }
    return view(initial, false)
  })

/**
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<PgClient, PostgresConfigError> => Layer.effect(PgClient, make(options))

/**
 * {@link layer} for options {@link decodeOptions} checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerDecoded = (options: Decoded): Layer.Layer<PgClient> => Layer.effect(PgClient, fromDecoded(options))

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
    Effect.gen(function* () {
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
  params?: ReadonlyArray<unknown>,
  options?: QueryOptions
): Effect.Effect<ReadonlyArray<Row>, PostgresError, PgClient> =>
  Effect.flatMap(Effect.service(PgClient), (client) => client.query<Row>(sql, params, options))

/**
 * `listen` of the `PgClient` in context.
 *
 * @category accessors
 * @since 0.5.0
 */
export const listen = (channel: string): Stream.Stream<string | undefined, never, PgClient> =>
  Stream.unwrap(Effect.map(Effect.service(PgClient), (client) => client.listen(channel)))

/**
 * `withTransaction` of the `PgClient` in context.
 *
 * @category accessors
 * @since 0.1.0
 */
export const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | PostgresError, R | PgClient> =>
  Effect.flatMap(Effect.service(PgClient), (client) => client.withTransaction(effect))
