import { describe, expect, it } from "@effect/vitest"
import { PgClient } from "@whizbang/postgres"
import * as Identifier from "../src/internal/identifier.js"
import { Effect, Exit } from "effect"

describe("Identifier", () => {
  it.each(["whizbang", "orders", "_private", "svc_2", "a".repeat(63)])("accepts %s", (name) => {
    expect(Identifier.isValid(name)).toBe(true)
  })

  it.each(["", "Orders", "2fast", "a-b", "a b", 'a"; DROP SCHEMA public CASCADE; --', "whizbang.wh_events", "ünicode", "a".repeat(64)])(
    "rejects %j",
    (name) => {
      expect(Identifier.isValid(name)).toBe(false)
    }
  )

  it.effect("validate fails with a PostgresConfigError naming the option", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Identifier.validate("x;y", "perspective"))
      expect(error._tag).toBe("PostgresConfigError")
      expect(error.option).toBe("perspective")
    })
  )

  it.effect("validateSchema rejects the pg_ namespace", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Identifier.validateSchema("pg_temp"))
      expect(error.option).toBe("schema")
    })
  )

  it("quote doubles embedded quotes", () => {
    expect(Identifier.quote("user")).toBe('"user"')
    expect(Identifier.quote('a"b')).toBe('"a""b"')
  })
})

describe("PgClient.make", () => {
  it.effect("rejects a hostile schema name before opening a pool", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Effect.scoped(PgClient.make({ url: "postgres://nobody@127.0.0.1:1/none", schema: 'x"; DROP TABLE t; --' }))
      )
      expect(Exit.isFailure(exit)).toBe(true)
      const error = yield* Effect.flip(
        Effect.scoped(PgClient.make({ url: "postgres://nobody@127.0.0.1:1/none", schema: "Robert'); DROP" }))
      )
      expect(error).toMatchObject({ _tag: "PostgresConfigError", option: "schema" })
    })
  )

  it.effect("defaults to the whizbang schema", () =>
    Effect.gen(function* () {
      const client = yield* Effect.scoped(PgClient.make({ url: "postgres://nobody@127.0.0.1:1/none" }))
      expect(client.schema).toBe("whizbang")
    })
  )
})
