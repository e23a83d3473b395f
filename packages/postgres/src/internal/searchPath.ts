// Which schema a pooled connection resolves unqualified names in. Every connection starts on its client's schema
// (the `search_path` startup option); a schema-bound view of the same pool (`PgClient.forSchema`, one per tenant)
// moves a connection to its own schema with one `SET` when it checks that connection out and finds it elsewhere.
// Whizbang's own statements skip this (`qualifiedStatement.ts`: they name the schema); the rest — an app's
// statements, schema changes, names resolved at run time — keep it.
// A connection that serves one tenant after another therefore pays one round trip per switch, none per statement;
// a prepared statement is re-planned by Postgres itself when the path it was planned under changes.
import { Effect } from "effect"
import type pg from "pg"
import type { PostgresError } from "../PostgresError.js"
import * as Connection from "./connection.js"
import * as Identifier from "./identifier.js"

const moved = new WeakMap<pg.ClientBase, string>()

/** The schema `connection` resolves names in: the one a view moved it to, else the pool's own (`initial`). */
export const current = (connection: Connection.Connection, initial: string): string => moved.get(connection.client) ?? initial

/**
 * Puts `connection` on `schema` (a validated identifier) unless it is there already. Session-level, so it must run
 * outside a transaction block: a rolled-back transaction would undo it without this module knowing.
 */
export const ensure = (
  connection: Connection.Connection,
  config: pg.ClientConfig,
  initial: string,
  schema: string
): Effect.Effect<void, PostgresError> =>
  current(connection, initial) === schema
    ? Effect.void
    : Effect.tap(Connection.run(connection, config, `SET search_path TO ${Identifier.quote(schema)}`), () =>
        Effect.sync(() => moved.set(connection.client, schema))
      )
