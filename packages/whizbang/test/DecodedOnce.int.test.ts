import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Effect } from "effect"
import { PerspectiveWorker, Whizbang } from "whizbang"
import * as Fixtures from "./fixtures.js"

// The worker's options object as a user hands it in, counting how often it is read: every decode reads `lease`
// once (the schema visits each key), so the count is the number of times the options were decoded.
const counted = () => {
  const reads = { lease: 0 }
  const options = { ...Fixtures.fast }
  Object.defineProperty(options, "lease", {
    enumerable: true,
    get: () => {
      reads.lease++
      return "5 minutes"
    }
  })
  return { reads, options }
}

describe("Whizbang.layer decodes its configuration once", () => {
  it.live("the worker's options are read once on the way from Whizbang.layer to the running claim loop", () =>
    Effect.gen(function* () {
      const { url } = yield* TestDatabase.TestDatabase
      const { events, perspectives } = yield* Fixtures.definitions
      const { reads, options } = counted()
      const app = Whizbang.layer({ databaseUrl: url, schema: "decoded", events, perspectives, options, watchdog: { interval: null } })
      yield* Effect.scoped(
        Effect.gen(function* () {
          const worker = yield* Effect.service(PerspectiveWorker.PerspectiveWorker)
          yield* worker.awaitPolls(1)
        }).pipe(Effect.provide(app))
      )
      expect(reads.lease).toBe(1)
      // Whizbang.validate decodes too (once), and builds nothing.
      yield* Whizbang.validate({ databaseUrl: url, events, perspectives, options })
      expect(reads.lease).toBe(2)
    }).pipe(Effect.scoped, Effect.provide(TestDatabase.layer))
  )
})
