import { describe, expect, it } from "@effect/vitest"
import { PostgresError } from "@whizbang/postgres"

const pgError = (code: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(`pg ${code}`), { code, severity: "ERROR", ...extra })

describe("PostgresError.classify", () => {
  it.each([
    ["08006", "ConnectionError"],
    ["08001", "ConnectionError"],
    ["57P01", "ConnectionError"],
    ["57P02", "ConnectionError"],
    ["57P03", "ConnectionError"],
    ["ECONNREFUSED", "ConnectionError"],
    ["ECONNRESET", "ConnectionError"],
    ["23505", "UniqueViolation"],
    ["23503", "ForeignKeyViolation"],
    ["40001", "SerializationFailure"],
    ["40P01", "Deadlock"],
    ["55P03", "LockNotAvailable"],
    ["57014", "QueryCanceled"],
    ["42P01", "UndefinedTable"],
    ["42601", "SyntaxError"],
    ["22P02", "Unknown"]
  ])("%s -> %s", (code, tag) => {
    expect(PostgresError.classify(pgError(code))._tag).toBe(tag)
  })

  it("keeps the constraint of a unique violation", () => {
    const reason = PostgresError.classify(pgError("23505", { constraint: "wh_events_stream_version_key", detail: "Key (..)" }))
    expect(reason).toMatchObject({ _tag: "UniqueViolation", constraint: "wh_events_stream_version_key" })
  })

  it("keeps the code of an unknown error", () => {
    expect(PostgresError.classify(pgError("22P02"))).toMatchObject({ _tag: "Unknown", code: "22P02" })
  })

  it("unwraps drizzle's DrizzleQueryError (cause chain)", () => {
    const wrapped = Object.assign(new Error("Failed query: insert ..."), { cause: pgError("23505", { constraint: "c" }) })
    expect(PostgresError.classify(wrapped)._tag).toBe("UniqueViolation")
  })

  it("classifies a connection lost without a code", () => {
    expect(PostgresError.classify(new Error("Connection terminated unexpectedly"))._tag).toBe("ConnectionError")
    expect(PostgresError.classify(new Error("boom"))._tag).toBe("Unknown")
    expect(PostgresError.classify("not an error")._tag).toBe("Unknown")
  })

  it("fromCause keeps the message and sql, not the values", () => {
    const error = PostgresError.fromCause(pgError("42P01"), "SELECT 1 FROM nope")
    expect(error._tag).toBe("PostgresError")
    expect(error.reason._tag).toBe("UndefinedTable")
    expect(error.sql).toBe("SELECT 1 FROM nope")
    expect(error.message).toBe("pg 42P01")
  })
})

describe("PostgresError.isRetryable", () => {
  it.each([
    ["08006", true],
    ["40001", true],
    ["40P01", true],
    ["55P03", true],
    ["23505", false],
    ["42601", false],
    ["57014", false]
  ])("%s -> %s", (code, retryable) => {
    expect(PostgresError.isRetryable(PostgresError.fromCause(pgError(code)))).toBe(retryable)
  })
})
