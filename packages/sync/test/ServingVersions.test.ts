// What the process knows about which versions serve a base: read from the registry only once a payload asks while it
// is unknown — services whose payloads never name a wait (a tenant's services in a worker process, started with each
// burst of work) never read it.
import { describe, expect, it } from "@effect/vitest"
import type { PgClient } from "@whizbang/postgres"
import { Deferred, Effect, Exit } from "effect"
import { ServingVersions } from "../src/internal/servingVersions.js"

/** A client whose only statement is the registry read: counted, answered with `balance` served by versions. */
const registry = () => {
  let reads = 0
  const read = Deferred.makeUnsafe<void>()
  const client = {
    query: () =>
      Effect.sync(() => {
        reads++
        Deferred.doneUnsafe(read, Exit.void)
        return [{ base_name: "balance", alone: false }]
      })
  } as unknown as PgClient.Shape
  return { client, reads: () => reads, read }
}

/** Gives the reader fiber every chance to run. */
const settle = Effect.repeat(Effect.yieldNow, { times: 20 })

describe("ServingVersions", () => {
  it.effect("a (re)connect alone reads nothing; the first question while unknown is answered no and has the registry read", () =>
    Effect.gen(function* () {
      const { client, reads, read } = registry()
      const serving = new ServingVersions(client)
      yield* serving.start(yield* Effect.scope)
      serving.notice(undefined)
      yield* settle
      expect(reads()).toBe(0)

      expect(serving.alone("orders")).toBe(false)
      yield* Deferred.await(read)
      yield* settle
      expect(reads()).toBe(1)
      expect(serving.alone("balance")).toBe(false)
      expect(serving.alone("orders")).toBe(true)

      // Detail lost again: unknown, and read again only when asked.
      serving.notice(undefined)
      yield* settle
      expect(serving.alone("orders")).toBe(false)
      yield* settle
      expect(reads()).toBe(2)
      expect(serving.alone("orders")).toBe(true)
    })
  )
})
