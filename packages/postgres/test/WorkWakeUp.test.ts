import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import * as WorkWakeUp from "../src/internal/workWakeUp.js"
import type { Shape } from "../src/PgClient.js"
import { PostgresError, Unknown } from "../src/PostgresError.js"

/** A client whose first `failures` statements fail (a broken connection), recording every attempt. */
const flakyClient = (failures: number) => {
  const attempts: Array<ReadonlyArray<unknown>> = []
  const client = {
    schema: "tenant_acme",
    query: (_sql: string, params: ReadonlyArray<unknown>) =>
      Effect.suspend(() => {
        attempts.push(params)
        return attempts.length <= failures
          ? Effect.fail(new PostgresError({ reason: new Unknown({ code: undefined }), message: "connection terminated" }))
          : Effect.succeed([])
      })
  } as unknown as Shape
  return { client, attempts }
}

describe("WorkWakeUp", () => {
  it.effect("a notification that fails is sent again (a tenant fleet starts an idle tenant on it alone)", () =>
    Effect.gen(function* () {
      const { client, attempts } = flakyClient(3)
      const wake = WorkWakeUp.make(client)
      yield* wake
      yield* Effect.yieldNow
      expect(attempts).toHaveLength(1)
      yield* TestClock.adjust("2 seconds")
      expect(attempts).toHaveLength(4)
      expect(attempts.every((params) => String(params[0]).startsWith("tenant_acme\n"))).toBe(true)
      // Sent: a later wake-up is one statement again.
      yield* wake
      yield* Effect.yieldNow
      expect(attempts).toHaveLength(5)
    })
  )

  it.effect("gives up after 5 retries, and a later wake-up is sent", () =>
    Effect.gen(function* () {
      const { client, attempts } = flakyClient(100)
      const wake = WorkWakeUp.make(client)
      yield* wake
      yield* TestClock.adjust("1 minute")
      expect(attempts).toHaveLength(6)
      yield* wake
      yield* TestClock.adjust("1 minute")
      expect(attempts).toHaveLength(12)
    })
  )
})
