// Runs an operation's SQL: Postgres errors become the CLI's DatabaseFailure.
import { PgClient, type PostgresError } from "@whizbang/postgres"
import { Effect } from "effect"
import { databaseFailure, type OperationError } from "../OperationError.js"

export const orFailure = <A, R>(
  effect: Effect.Effect<A, PostgresError.PostgresError | OperationError, R>
): Effect.Effect<A, OperationError, R> => Effect.catchTag(effect, "PostgresError", (e) => Effect.fail(databaseFailure(e)))

export const query = <Row extends object = Record<string, unknown>>(sql: string, params?: ReadonlyArray<unknown>) =>
  orFailure(PgClient.query<Row>(sql, params))

export const iso = (value: unknown): string | null => (value === null || value === undefined ? null : new Date(value as Date).toISOString())
