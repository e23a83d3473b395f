import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect } from "effect"
import { PerspectiveWorker, Whizbang } from "whizbang"
import * as Fixtures from "./fixtures.js"

describe("a burst of work costs one claim (Whizbang.layer)", () => {
  it.live("work waiting at start: one claim takes it, and neither the LISTEN confirmation nor the consumers' end claims again", () =>
    Fixtures.withDatabase((url) =>
      Effect.gen(function* () {
        const { events, perspectives } = yield* Fixtures.definitions
        const config = { databaseUrl: url, schema: "one_claim", events, perspectives, watchdog: { interval: null } }
        const accounts = ["a", "b", "c"].map((k) => `01a24e00-0000-7000-8000-00000000000${k}`)
        // Appended before any worker runs (a process that only writes).
        yield* Effect.forEach(accounts, (id) => Effect.andThen(Fixtures.deposit(id, 1), Fixtures.deposit(id, 2)), {
          discard: true
        }).pipe(Effect.provide(Whizbang.layerWithoutWorker(config)))

        const idle = yield* Deferred.make<void>()
        yield* Effect.gen(function* () {
          const worker = yield* PerspectiveWorker.PerspectiveWorker
          yield* Deferred.await(idle)
          // No safety-net poll within the test (30 s): every claim counted was a wake-up's or the start's.
          expect((yield* worker.stats).polls).toBe(1)
          const rows = yield* Fixtures.sql<{ id: string; total: number }>(
            "SELECT id::text, (data->>'total')::int AS total FROM one_claim.wh_per_balance ORDER BY id"
          )
          expect(rows.map((r) => [r.id, r.total])).toEqual(accounts.map((id) => [id, 3]))
        }).pipe(
          Effect.provide(
            Whizbang.layer({
              ...config,
              options: { idleThresholdPolls: 1, pollingInterval: Duration.seconds(30), notifyHealthyPollingInterval: Duration.seconds(30) },
              hooks: { onWorkProcessingIdle: () => Deferred.succeed(idle, undefined).pipe(Effect.asVoid) }
            })
          ),
          Effect.scoped
        )
      })
    )
  )
})
