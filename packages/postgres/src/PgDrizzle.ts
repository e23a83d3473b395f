/**
 * drizzle queries on the service's `PgClient`: `PgDrizzle.run((db) => db.select().from(tables.events))` runs on the
 * current transaction's connection (inside `withTransaction`, also in forked child fibers), or on the pool outside
 * one, and fails with a classified `PostgresError`.
 *
 * Part of the opt-in `@whizbang/postgres/drizzle` entry: Whizbang itself never needs drizzle-orm, so only apps that
 * import this entry install it (`drizzle-orm` is an optional peer dependency).
 *
 * **Gotchas**: the callback is a plain promise: an interrupted `run` is not cancelled on the server (a `query` is).
 *
 * @since 0.5.0
 */
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres"
import { Effect, Option } from "effect"
import * as Transaction from "./internal/transaction.js"
import { PgClient } from "./PgClient.js"
import { fromCause, type PostgresError } from "./PostgresError.js"

/**
 * Runs one drizzle query with the `PgClient` in context.
 *
 * @category accessors
 * @since 0.5.0
 */
export const run = <A>(f: (db: NodePgDatabase) => PromiseLike<A>): Effect.Effect<A, PostgresError, PgClient> =>
  Effect.flatMap(Effect.service(PgClient), (client) => {
    const onTransaction = Effect.flatMap(Transaction.currentClient(client), (connection) =>
      Option.isSome(connection)
        ? Effect.tryPromise({ try: () => f(drizzle(connection.value)), catch: (cause) => fromCause(cause) })
        : Effect.die(new Error("PgDrizzle.run: no transaction connection"))
    )
    // Outside a transaction the query gets a one-statement transaction of its own: a pooled connection is put on the
    // client's schema (a tenant's, for a schema-bound view) only by the client's own checkout, never by drizzle's.
    return Effect.flatMap(Transaction.currentClient(client), (connection) =>
      Option.isSome(connection) ? onTransaction : client.withTransaction(onTransaction)
    )
  })
