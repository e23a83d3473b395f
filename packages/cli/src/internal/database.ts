// Runs a `PgOperations` operation on the client in context: Postgres errors become the CLI's DatabaseFailure.
import { PgClient, type PostgresError } from "@whizbang/postgres"
import type { PgOperations } from "@whizbang/postgres/internal"
import { Effect } from "effect"
import { databaseFailure, type OperationError } from "../OperationError.js"

export const orFailure = <A, R>(
  effect: Effect.Effect<A, PostgresError.PostgresError | OperationError, R>
): Effect.Effect<A, OperationError, R> => Effect.catchTag(effect, "PostgresError", (e) => Effect.fail(databaseFailure(e)))

export const run = <Request, A>(
  operation: PgOperations.Operation<Request, A>,
  ...request: [Request] extends [undefined] ? [] : [request: Request]
): Effect.Effect<A, OperationError, PgClient.PgClient> => orFailure(PgClient.PgClient.use((client) => operation(client, ...request)))

export const iso = (value: Date | null): string | null => (value === null ? null : value.toISOString())
