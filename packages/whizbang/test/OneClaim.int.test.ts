import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Layer, Schedule } from "effect"
import { EventId, PerspectiveWorker, Whizbang } from "whizbang"
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

  it.live("two instances, four concurrent writers, safety-net polls at 30 s: every event is applied without waiting for a poll", () =>
    Fixtures.withDatabase((url) =>
      Effect.scoped(
        Effect.gen(function* () {
          const { events, perspectives } = yield* Fixtures.definitions
          const config = {
            databaseUrl: url,
            schema: "one_claim_many",
            events,
            perspectives,
            watchdog: { interval: null },
            // A worker that skipped a claim it needed would leave work for the next poll: 30 s, past the test's wait.
            options: { ...Fixtures.fast, pollingInterval: Duration.seconds(30), notifyHealthyPollingInterval: Duration.seconds(30) }
          }
          const instances = [yield* Layer.build(Whizbang.layer(config)), yield* Layer.build(Whizbang.layer(config))]
          const accounts = Array.from({ length: 12 }, () => EventId.unsafeMake())
          // Writer w appends through instance w % 2: 25 deposits of w + 1 each, on accounts chosen round-robin.
          const writer = (w: number) =>
            Effect.forEach(
              Array.from({ length: 25 }, (_, i) => accounts[(w * 7 + i) % accounts.length]!),
              (id) => Fixtures.deposit(id, w + 1),
              { discard: true }
            ).pipe(Effect.provideContext(instances[w % 2]!))
          yield* Effect.all([0, 1, 2, 3].map(writer), { concurrency: "unbounded", discard: true })
          const expected = new Map<string, number>()
          for (const w of [0, 1, 2, 3])
            for (let i = 0; i < 25; i++) {
              const id = accounts[(w * 7 + i) % accounts.length]!
              expected.set(id, (expected.get(id) ?? 0) + w + 1)
            }
          const totals = Fixtures.sql<{ id: string; total: number }>(
            "SELECT id::text, (data->>'total')::int AS total FROM one_claim_many.wh_per_balance"
          ).pipe(
            Effect.map((rows) => new Map(rows.map((r) => [r.id, r.total]))),
            Effect.provideContext(instances[0]!)
          )
          const applied = yield* totals.pipe(
            Effect.repeat({
              until: (seen) => [...expected].every(([id, total]) => seen.get(id) === total),
              schedule: Schedule.spaced("50 millis"),
              times: 200
            })
          )
          expect(new Map([...applied].sort())).toEqual(new Map([...expected].sort()))
          const polls = yield* Effect.forEach(instances, (context) =>
            Effect.flatMap(Effect.provideContext(Effect.service(PerspectiveWorker.PerspectiveWorker), context), (w) => w.stats)
          )
          // Both instances took part (the work is spread by partition).
          expect(polls.every((s) => s.eventsApplied > 0)).toBe(true)
        })
      )
    )
  )
})
