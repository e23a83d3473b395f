/**
 * Why a storage operation failed, as the storage classifies it: the reason union every port error carries
 * (`WorkCoordinatorError`, `PerspectiveStoreError`, `LifecycleStoreError`) and `@whizbang/postgres`'s
 * `PostgresError` (which re-exports these classes under the same names). Callers match on `error.reason._tag`
 * (`ConnectionError`, `Deadlock`, ...) instead of parsing messages. The Postgres layers classify by SQLSTATE; the
 * in-memory layers fail with {@link Unknown}, {@link Refused} or {@link InvalidRequest}.
 *
 * @since 0.5.0
 */
import { Data } from "effect"

/**
 * The server is unreachable, the connection dropped, or the server is shutting down
 * (SQLSTATE class 08, 57P01-57P03, ECONNREFUSED, ECONNRESET, ETIMEDOUT, ...).
 *
 * @category reasons
 * @since 0.5.0
 */
export class ConnectionError extends Data.TaggedClass("ConnectionError")<{ readonly code: string | undefined }> {}

/**
 * 23505: a unique constraint or primary key rejected the row.
 *
 * @category reasons
 * @since 0.5.0
 */
export class UniqueViolation extends Data.TaggedClass("UniqueViolation")<{
  readonly constraint: string | undefined
  readonly detail: string | undefined
}> {}

/**
 * 23503: a foreign key rejected the row.
 *
 * @category reasons
 * @since 0.5.0
 */
export class ForeignKeyViolation extends Data.TaggedClass("ForeignKeyViolation")<{
  readonly constraint: string | undefined
}> {}

/**
 * 40001: a serializable transaction lost a race; retry the whole transaction.
 *
 * @category reasons
 * @since 0.5.0
 */
export class SerializationFailure extends Data.TaggedClass("SerializationFailure")<{}> {}

/**
 * 40P01: the server aborted this transaction to break a deadlock; retry the whole transaction.
 *
 * @category reasons
 * @since 0.5.0
 */
export class Deadlock extends Data.TaggedClass("Deadlock")<{}> {}

/**
 * 55P03: `NOWAIT` or `lock_timeout` could not take a lock.
 *
 * @category reasons
 * @since 0.5.0
 */
export class LockNotAvailable extends Data.TaggedClass("LockNotAvailable")<{}> {}

/**
 * 57014: cancelled by `statement_timeout`, `pg_cancel_backend` or an interrupted fiber.
 *
 * @category reasons
 * @since 0.5.0
 */
export class QueryCanceled extends Data.TaggedClass("QueryCanceled")<{}> {}

/**
 * 42P01: the relation does not exist (often: migrations not applied to this schema).
 *
 * @category reasons
 * @since 0.5.0
 */
export class UndefinedTable extends Data.TaggedClass("UndefinedTable")<{}> {}

/**
 * 42601: the statement does not parse.
 *
 * @category reasons
 * @since 0.5.0
 */
export class SyntaxError extends Data.TaggedClass("SyntaxError")<{ readonly position: string | undefined }> {}

/**
 * The statement ran, but what came back is not what its operation declares: a row that does not decode with the
 * operation's row schema, or no row where exactly one is expected. `operation` names the operation
 * (`streamLocks.tryAcquire`), `issue` says what did not match. A bug or a schema the release does not know (a
 * migration missing or newer), never a transient failure.
 *
 * @category reasons
 * @since 0.5.0
 */
export class UnexpectedRow extends Data.TaggedClass("UnexpectedRow")<{ readonly operation: string; readonly issue: string }> {}

/**
 * Anything else; `code` is the SQLSTATE or Node.js error code when there is one.
 *
 * @category reasons
 * @since 0.5.0
 */
export class Unknown extends Data.TaggedClass("Unknown")<{ readonly code: string | undefined }> {}

/**
 * @category models
 * @since 0.5.0
 */
export type Reason =
  | ConnectionError
  | UniqueViolation
  | ForeignKeyViolation
  | SerializationFailure
  | Deadlock
  | LockNotAvailable
  | QueryCanceled
  | UndefinedTable
  | SyntaxError
  | UnexpectedRow
  | Unknown

/**
 * The storage refused the request because the state it was computed from is gone: a completion whose lease was
 * lost, or whose work rows a rewind or bootstrap covered since the fetch (nothing was written; the work is
 * delivered again).
 *
 * @category reasons
 * @since 0.5.0
 */
export class Refused extends Data.TaggedClass("Refused")<{}> {}

/**
 * The request itself is invalid (a perspective name that is not one): no storage was asked.
 *
 * @category reasons
 * @since 0.5.0
 */
export class InvalidRequest extends Data.TaggedClass("InvalidRequest")<{}> {}

/**
 * What a port error can carry: the storage's {@link Reason}, or a refusal before or by the storage.
 *
 * @category models
 * @since 0.5.0
 */
export type PortReason = Reason | Refused | InvalidRequest
