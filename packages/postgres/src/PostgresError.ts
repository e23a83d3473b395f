/**
 * The errors of `@whizbang/postgres`. A failed statement is a `PostgresError` whose `reason` is classified from
 * the SQLSTATE (or the Node.js socket error code), so callers match on `error.reason._tag` instead of parsing
 * messages. Invalid configuration (a hostile schema name, ...) is a `PostgresConfigError` naming the option;
 * a migration that cannot be applied safely is a `MigrationError`.
 *
 * @since 0.1.0
 */
import { Data } from "effect"

/**
 * The server is unreachable, the connection dropped, or the server is shutting down
 * (SQLSTATE class 08, 57P01-57P03, ECONNREFUSED, ECONNRESET, ETIMEDOUT, ...).
 *
 * @category reasons
 * @since 0.1.0
 */
export class ConnectionError extends Data.TaggedClass("ConnectionError")<{ readonly code: string | undefined }> {}

/**
 * 23505: a unique constraint or primary key rejected the row.
 *
 * @category reasons
 * @since 0.1.0
 */
export class UniqueViolation extends Data.TaggedClass("UniqueViolation")<{
  readonly constraint: string | undefined
  readonly detail: string | undefined
}> {}

/**
 * 23503: a foreign key rejected the row.
 *
 * @category reasons
 * @since 0.1.0
 */
export class ForeignKeyViolation extends Data.TaggedClass("ForeignKeyViolation")<{
  readonly constraint: string | undefined
}> {}

/**
 * 40001: a serializable transaction lost a race; retry the whole transaction.
 *
 * @category reasons
 * @since 0.1.0
 */
export class SerializationFailure extends Data.TaggedClass("SerializationFailure")<{}> {}

/**
 * 40P01: the server aborted this transaction to break a deadlock; retry the whole transaction.
 *
 * @category reasons
 * @since 0.1.0
 */
export class Deadlock extends Data.TaggedClass("Deadlock")<{}> {}

/**
 * 55P03: `NOWAIT` or `lock_timeout` could not take a lock.
 *
 * @category reasons
 * @since 0.1.0
 */
export class LockNotAvailable extends Data.TaggedClass("LockNotAvailable")<{}> {}

/**
 * 57014: cancelled by `statement_timeout`, `pg_cancel_backend` or an interrupted fiber.
 *
 * @category reasons
 * @since 0.1.0
 */
export class QueryCanceled extends Data.TaggedClass("QueryCanceled")<{}> {}

/**
 * 42P01: the relation does not exist (often: migrations not applied to this schema).
 *
 * @category reasons
 * @since 0.1.0
 */
export class UndefinedTable extends Data.TaggedClass("UndefinedTable")<{}> {}

/**
 * 42601: the statement does not parse.
 *
 * @category reasons
 * @since 0.1.0
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
 * @since 0.1.0
 */
export class Unknown extends Data.TaggedClass("Unknown")<{ readonly code: string | undefined }> {}

/**
 * @category models
 * @since 0.1.0
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
 * A failed Postgres operation. The SQL text is kept for diagnostics; bound values never are (they may hold
 * personal data).
 *
 * @category errors
 * @since 0.1.0
 */
export class PostgresError extends Data.TaggedError("PostgresError")<{
  readonly reason: Reason
  readonly message: string
  readonly sql?: string | undefined
  readonly cause?: unknown
}> {}

/**
 * An option failed validation at start-up; `option` names it.
 *
 * @category errors
 * @since 0.1.0
 */
export class PostgresConfigError extends Data.TaggedError("PostgresConfigError")<{
  readonly option: string
  readonly message: string
}> {}

/**
 * A migration cannot be applied safely, e.g. an applied migration's SQL changed since it ran.
 *
 * @category errors
 * @since 0.1.0
 */
export class MigrationError extends Data.TaggedError("MigrationError")<{
  readonly schema: string
  readonly tag: string
  readonly message: string
}> {}

/**
 * Another live process already runs with this instance id (its row in `wh_service_instances` has a fresh
 * heartbeat and a different boot token). Two processes sharing an id would share leases, so start-up refuses.
 *
 * @category errors
 * @since 0.1.0
 */
export class DuplicateInstanceError extends Data.TaggedError("DuplicateInstanceError")<{
  readonly instanceId: string
  readonly holderHostName: string
  readonly holderProcessId: number
  readonly heartbeatAgeSeconds: number
  readonly abandonStaleInstanceThresholdSeconds: number
}> {
  override get message(): string {
    return (
      `instance id ${this.instanceId} is already in use by process ${this.holderProcessId} on host "${this.holderHostName}" ` +
      `(last heartbeat ${this.heartbeatAgeSeconds.toFixed(1)} s ago): give every process its own instance id, or wait until ` +
      `that heartbeat is older than abandonStaleInstanceThreshold (${this.abandonStaleInstanceThresholdSeconds} s)`
    )
  }
}

const connectionErrnos = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH"
])

interface PgErrorFields {
  readonly code?: unknown
  readonly constraint?: unknown
  readonly detail?: unknown
  readonly position?: unknown
  readonly message?: unknown
  readonly cause?: unknown
}

const optionalString = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

// drizzle wraps driver errors (`DrizzleQueryError`, `cause` = the pg error); walk the cause chain to the first
// error that carries a code.
const findCoded = (cause: unknown): PgErrorFields | undefined => {
  let current: unknown = cause
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const fields = current as PgErrorFields
    if (typeof fields.code === "string") return fields
    current = fields.cause
  }
  return undefined
}

/**
 * Classifies a driver error (pg `DatabaseError`, Node.js socket error, drizzle-wrapped error) into a `Reason`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const classify = (cause: unknown): Reason => {
  const fields = findCoded(cause)
  const code = optionalString(fields?.code)
  if (code === undefined) {
    // pg reports a connection lost mid-query without a code.
    const message = optionalString((cause as PgErrorFields | undefined)?.message) ?? ""
    return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(message)
      ? new ConnectionError({ code: undefined })
      : new Unknown({ code: undefined })
  }
  if (code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || connectionErrnos.has(code)) {
    return new ConnectionError({ code })
  }
  switch (code) {
    case "23505":
      return new UniqueViolation({
        constraint: optionalString(fields?.constraint),
        detail: optionalString(fields?.detail)
      })
    case "23503":
      return new ForeignKeyViolation({ constraint: optionalString(fields?.constraint) })
    case "40001":
      return new SerializationFailure()
    case "40P01":
      return new Deadlock()
    case "55P03":
      return new LockNotAvailable()
    case "57014":
      return new QueryCanceled()
    case "42P01":
      return new UndefinedTable()
    case "42601":
      return new SyntaxError({ position: optionalString(fields?.position) })
    default:
      return new Unknown({ code })
  }
}

/**
 * Wraps any driver failure as a `PostgresError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromCause = (cause: unknown, sql?: string): PostgresError => {
  const fields = findCoded(cause) ?? (cause as PgErrorFields | undefined)
  const message = optionalString(fields?.message) ?? String(cause)
  return new PostgresError({ reason: classify(cause), message, sql, cause })
}

/**
 * Whether retrying the whole operation (transaction) may succeed: lost connections, serialization failures,
 * deadlocks and lock timeouts.
 *
 * @category predicates
 * @since 0.1.0
 */
export const isRetryable = (error: PostgresError): boolean => {
  switch (error.reason._tag) {
    case "ConnectionError":
    case "SerializationFailure":
    case "Deadlock":
    case "LockNotAvailable":
      return true
    default:
      return false
  }
}
