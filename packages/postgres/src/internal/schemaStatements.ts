// Prepared statements of schema-bound views (`PgClient.forSchema`, one per tenant). Postgres re-plans a prepared
// statement whenever the search_path it was planned under changed, so a statement shared by every tenant was
// planned again at nearly every execution on a connection that serves tenants in turn (a claim: about 3 ms of
// planning for 0.6 ms of work). Named per schema instead, each tenant's statements keep their plans on a connection.
// A connection holds at most `capacity` of them: the least recently used are deallocated to make room (several in
// one round trip), so a process serving thousands of tenants keeps its sessions' memory bounded.
import { Effect } from "effect"
import type pg from "pg"
import type { PostgresError } from "../PostgresError.js"
import * as Connection from "./connection.js"
import * as Identifier from "./identifier.js"
import * as StatementName from "./statementName.js"

/** Statements named per schema kept prepared on one connection. */
export const capacity = 256

const used = new WeakMap<pg.ClientBase, Map<string, true>>()

/** The name of `sql` prepared for `schema`: the statement's own name, plus the schema's tag unless it is `initial`. */
export const nameOf = (sql: string, schema: string, initial: string): string =>
  schema === initial ? StatementName.of(sql) : `${StatementName.of(sql)}_${StatementName.of(schema).slice(3, 11)}`

/** SQLSTATE 26000: the server has no prepared statement of that name. */
const isMissing = (error: PostgresError): boolean => error.reason._tag === "Unknown" && error.reason.code === "26000"

const parsedOn = (client: pg.ClientBase): Record<string, string> | undefined =>
  (client as unknown as { readonly connection?: { readonly parsedStatements?: Record<string, string> } }).connection?.parsedStatements

/** How many of the least recently used statements go when a connection is full: one round trip for all of them. */
export const evictedTogether = 64

/**
 * Records that `name` (a per-schema name) runs on `connection` now. When the connection holds `capacity` already,
 * the {@link evictedTogether} least recently used go first, deallocated in one round trip (a process sweeping through
 * thousands of tenants prepares a statement for nearly every one it runs: one `DEALLOCATE` each was a round trip per
 * statement). Only statements pg saw prepared are deallocated: a name recorded here whose statement never reached
 * the server (it failed, or ran in an aborted transaction) has nothing to drop, and a DEALLOCATE of it would fail.
 * Uninterruptible: a DEALLOCATE sent is always recorded (interrupted between the two, the server would have dropped
 * statements pg still believes prepared, and every later use of those names on the connection would fail).
 */
export const use = (connection: Connection.Connection, config: pg.ClientConfig, name: string): Effect.Effect<void, PostgresError> =>
  Effect.uninterruptible(
    Effect.suspend(() => {
      const client = connection.client
      let names = used.get(client)
      if (names === undefined) used.set(client, (names = new Map()))
      if (names.delete(name) || names.size < capacity) {
        names.set(name, true)
        return Effect.void
      }
      const evicted: Array<string> = []
      for (const oldest of names.keys()) {
        if (evicted.length >= evictedTogether) break
        evicted.push(oldest)
      }
      for (const oldest of evicted) names.delete(oldest)
      names.set(name, true)
      const parsed = parsedOn(client)
      const prepared = parsed === undefined ? evicted : evicted.filter((oldest) => parsed[oldest] !== undefined)
      if (prepared.length === 0) return Effect.void
      // One that is missing fails the text at that statement (the earlier ones are dropped): then one by one.
      const deallocate = (names: ReadonlyArray<string>): Effect.Effect<void, PostgresError> =>
        Effect.catchIf(
          Effect.asVoid(Connection.run(connection, config, names.map((n) => `DEALLOCATE ${Identifier.quote(n)}`).join("; "))),
          isMissing,
          () => (names.length === 1 ? Effect.void : Effect.forEach(names, (n) => deallocate([n]), { discard: true }))
        )
      return Effect.map(
        deallocate(prepared),
        // pg remembers what it prepared on the connection, and would otherwise send only the name next time.
        () => {
          if (parsed !== undefined) for (const oldest of prepared) delete parsed[oldest]
        }
      )
    })
  )

/**
 * Runs the prepared statement `name` on `connection`; should the server not know it (whatever made pg's record of
 * the connection's statements wrong), pg is told to prepare it again and the statement runs once more. It failed at
 * its bind, before doing anything; inside a transaction block the transaction is aborted by then, and the retry
 * reports that.
 */
export const run = <Row>(
  connection: Connection.Connection,
  config: pg.ClientConfig,
  sql: string,
  params: ReadonlyArray<unknown> | undefined,
  name: string
): Effect.Effect<ReadonlyArray<Row>, PostgresError> =>
  Effect.catchIf(Connection.run<Row>(connection, config, sql, params, name), isMissing, () =>
    Effect.suspend(() => {
      const parsed = parsedOn(connection.client)
      if (parsed !== undefined) delete parsed[name]
      return Connection.run<Row>(connection, config, sql, params, name)
    })
  )

/** The per-schema statements prepared on `connection` (tests). @internal */
export const preparedOn = (connection: Connection.Connection): number => used.get(connection.client)?.size ?? 0
