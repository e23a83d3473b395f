// Transactions carried in fiber context. The current transaction is a Context.Reference (default: none), so
// `query` needs no extra requirement, and forked child fibers inherit it. It records its pool, so a second
// PgClient (another pool) never runs on a transaction it did not open. Views of one pool bound to other schemas
// (`PgClient.forSchema`: tenants) share its connections, so a transaction also records its schema: a statement of
// another schema's view inside it is a defect (nothing may need two tenants in one transaction), never a statement
// that silently runs outside the transaction or in the wrong schema.
import { Context, Effect, Exit, Option } from "effect"
import type pg from "pg"
import type { PostgresError } from "../PostgresError.js"
import * as Connection from "./connection.js"

interface Transaction {
  readonly pool: pg.Pool
  readonly schema: string
  readonly connection: Connection.Connection
  readonly depth: number
}

const CurrentTransaction = Context.Reference<Option.Option<Transaction>>("@whizbang/postgres/PgClient/CurrentTransaction", {
  defaultValue: () => Option.none()
})

const isBroken = (exit: Exit.Exit<unknown, unknown>): boolean =>
  Option.match(Exit.findErrorOption(exit), {
    onNone: () => false,
    onSome: (e) => (e as Partial<PostgresError>)._tag === "PostgresError" && (e as PostgresError).reason._tag === "ConnectionError"
  })

/** How a statement reaches its connection: the pool, the schema of the view, and how to put a connection on it. */
export interface Target {
  readonly pool: pg.Pool
  readonly schema: string
  /** Moves a freshly checked-out connection to `schema` (outside any transaction block). */
  readonly prepare: (connection: Connection.Connection) => Effect.Effect<void, PostgresError>
}

const currentOn = (target: Pick<Target, "pool" | "schema">): Effect.Effect<Option.Option<Transaction>> =>
  Effect.flatMap(Effect.service(CurrentTransaction), (tx) =>
    Option.isSome(tx) && tx.value.pool === target.pool && tx.value.schema !== target.schema
      ? Effect.die(
          new Error(
            `a statement for schema "${target.schema}" inside a transaction of schema "${tx.value.schema}": ` +
              "one transaction serves one tenant (run the other tenant's work outside it)"
          )
        )
      : Effect.succeed(Option.filter(tx, (t) => t.pool === target.pool))
  )

/** The current transaction's client on `pool`, if any (for drizzle). */
export const currentClient = (target: Pick<Target, "pool" | "schema">): Effect.Effect<Option.Option<pg.PoolClient>> =>
  Effect.map(
    currentOn(target),
    Option.map((tx) => tx.connection.client)
  )

/** Runs `effect` outside any transaction of this fiber (its statements on connections of their own). */
export const outside = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, CurrentTransaction, Option.none())

/**
 * Runs `use` on the current transaction's connection, or on a connection checked out for it alone: moved to the
 * target's schema first, unless `anySchema` (a statement whose every relation is schema-qualified).
 */
export const withConnection = <A, E, R>(
  target: Target,
  use: (connection: Connection.Connection) => Effect.Effect<A, E, R>,
  anySchema = false
): Effect.Effect<A, E | PostgresError, R> =>
  Effect.flatMap(currentOn(target), (current) =>
    Option.isSome(current)
      ? use(current.value.connection)
      : Effect.acquireUseRelease(anySchema ? Connection.acquire(target.pool, target.schema) : acquire(target), use, (connection, exit) =>
          Connection.release(connection, isBroken(exit))
        )
  )

/** A connection of the pool, on the target's schema; released (destroyed) when it cannot be moved there. */
const acquire = (target: Target): Effect.Effect<Connection.Connection, PostgresError> =>
  Effect.flatMap(Connection.acquire(target.pool, target.schema), (connection) =>
    Effect.as(
      Effect.onError(target.prepare(connection), () => Connection.release(connection, true)),
      connection
    )
  )

const topLevel = <A, E, R>(
  target: Target,
  statement: (connection: Connection.Connection, sql: string) => Effect.Effect<void, PostgresError>,
  effect: Effect.Effect<A, E, R>
) =>
  Effect.acquireUseRelease(
    acquire(target).pipe(
      Effect.tap((connection) => statement(connection, "BEGIN").pipe(Effect.onError(() => Connection.release(connection, true))))
    ),
    (connection) =>
      effect.pipe(
        Effect.provideService(CurrentTransaction, Option.some({ pool: target.pool, schema: target.schema, connection, depth: 0 })),
        // An interrupted COMMIT would leave the outcome unknown to the caller; let it finish.
        Effect.tap(() => Effect.uninterruptible(statement(connection, "COMMIT")))
      ),
    (connection, exit) =>
      Exit.isSuccess(exit)
        ? Connection.release(connection, false)
        : Connection.awaitSettled(connection).pipe(
            Effect.andThen(Effect.exit(statement(connection, "ROLLBACK"))),
            // A connection that cannot even roll back is destroyed rather than returned to the pool.
            Effect.flatMap((rollback) => Connection.release(connection, Exit.isFailure(rollback)))
          )
  )

const nested = <A, E, R>(
  outer: Transaction,
  statement: (connection: Connection.Connection, sql: string) => Effect.Effect<void, PostgresError>,
  effect: Effect.Effect<A, E, R>
) => {
  const savepoint = `wh_savepoint_${outer.depth + 1}`
  const { connection } = outer
  return Effect.acquireUseRelease(
    statement(connection, `SAVEPOINT ${savepoint}`),
    () =>
      effect.pipe(
        Effect.provideService(CurrentTransaction, Option.some({ ...outer, depth: outer.depth + 1 })),
        Effect.tap(() => Effect.uninterruptible(statement(connection, `RELEASE SAVEPOINT ${savepoint}`)))
      ),
    (_, exit) =>
      Exit.isSuccess(exit)
        ? Effect.void
        : Connection.awaitSettled(connection).pipe(
            Effect.andThen(statement(connection, `ROLLBACK TO SAVEPOINT ${savepoint}; RELEASE SAVEPOINT ${savepoint}`)),
            // If even that fails the outer transaction is unusable, and its own statements will say so.
            Effect.ignore
          )
  )
}

/** A transaction on `pool`, or a savepoint inside the current one. */
export const withTransaction = <A, E, R>(
  target: Target,
  statement: (connection: Connection.Connection, sql: string) => Effect.Effect<void, PostgresError>,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | PostgresError, R> =>
  Effect.flatMap(currentOn(target), (current) =>
    Option.isSome(current) ? nested(current.value, statement, effect) : topLevel(target, statement, effect)
  )
