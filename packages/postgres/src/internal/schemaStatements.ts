// Prepared statements of schema-bound views (`PgClient.forSchema`, one per tenant). Postgres re-plans a prepared
// statement whenever the search_path it was planned under changed, so a statement shared by every tenant was
// planned again at nearly every execution on a connection that serves tenants in turn (a claim: about 3 ms of
// planning for 0.6 ms of work). Named per schema instead, each tenant's statements keep their plans on a connection.
// A connection holds at most `capacity` of them: the least recently used is deallocated to make room, so a process
// serving thousands of tenants keeps its sessions' memory bounded.
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

/**
 * Records that `name` (a per-schema name) runs on `connection` now, deallocating the least recently used one first
 * when the connection holds `capacity` already.
 */
export const use = (connection: Connection.Connection, config: pg.ClientConfig, name: string): Effect.Effect<void, PostgresError> =>
  Effect.suspend(() => {
    const client = connection.client
    let names = used.get(client)
    if (names === undefined) used.set(client, (names = new Map()))
    if (names.delete(name) || names.size < capacity) {
      names.set(name, true)
      return Effect.void
    }
    const oldest = names.keys().next().value as string
    return Effect.map(Connection.run(connection, config, `DEALLOCATE ${Identifier.quote(oldest)}`), () => {
      names.delete(oldest)
      names.set(name, true)
      // pg remembers what it prepared on the connection, and would otherwise send only the name next time.
      const parsed = (client as unknown as { readonly connection?: { readonly parsedStatements?: Record<string, string> } }).connection
        ?.parsedStatements
      if (parsed !== undefined) delete parsed[oldest]
    })
  })

/** The per-schema statements prepared on `connection` (tests). @internal */
export const preparedOn = (connection: Connection.Connection): number => used.get(connection.client)?.size ?? 0
