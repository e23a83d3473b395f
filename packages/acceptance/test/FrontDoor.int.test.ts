// The front door under ordinary concurrency: several writers on the same streams, two worker processes, every
// read model checked against the fold computed by SQL from `wh_events` alone. Composed only from `whizbang`,
// as the README composes it (the database comes from @whizbang/testing).
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Duration, Effect, Option } from "effect"
import { EventStore, SyncAwareLens, SyncEventTracker, SyncFilter } from "whizbang"
import * as Domain from "./support/domain.js"
import * as Workers from "./support/workers.js"
import * as Writer from "./support/writer.js"

describe("the front door", () => {
  it.live("(a) 10 concurrent appenders, 200 overlapping streams, 20,000 events, 2 worker processes: every fold exact, nothing left", () =>
    Effect.gen(function* () {
      const { url } = yield* TestDatabase.TestDatabase
      const schema = "front_a"
      const started = Date.now()
      const result = yield* Effect.gen(function* () {
        const workers = [yield* Workers.start({ url, schema }), yield* Workers.start({ url, schema })]
        const appended = yield* Writer.appendConcurrently({ streamIds: Writer.streams(200), appenders: 10, perAppender: 2_000, batch: 20 })
        const appendedAt = Date.now()
        const reports = yield* Workers.settle(
          workers,
          Effect.map(Writer.counts, (c) => c.work)
        )
        return {
          appended,
          appendedAt,
          reports,
          counts: yield* Writer.counts,
          shared: yield* Writer.sharedTransactions,
          balance: yield* Writer.mismatches("balance"),
          activity: yield* Writer.mismatches("activity")
        }
      }).pipe(Effect.provide(Writer.layer(url, schema)))
      const rewinds = result.reports.reduce((n, r) => n + r.rewinds.rewound, 0)
      console.log(
        `front door (a): ${result.appended} events, 200 streams, appended in ${result.appendedAt - started} ms, settled after ${Date.now() - started} ms; ` +
          `mismatches balance ${result.balance}, activity ${result.activity}; rewinds ${rewinds}; ` +
          `transactions holding several appends ${result.shared}; ` +
          `applied per worker ${result.reports.map((r) => r.stats.eventsApplied).join(" / ")}`
      )
      expect(result.counts).toEqual({ events: 20_000, work: 0, dead_letters: 0 })
      // The appenders outpaced two statements in flight: appends went together, and every fold is still exact.
      expect(result.shared).toBeGreaterThan(0)
      expect(result.balance).toBe(0)
      expect(result.activity).toBe(0)
      expect(result.reports.every((r) => r.idle)).toBe(true)
    }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped)
  )

  it.live(
    "(b) worker processes that poll once a minute are woken by another process's appends: 4 writers, every read-your-writes wait answered well before a poll",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "front_b"
        // Only the NOTIFY after each append (it names the appending process, which the workers are not) can wake them
        // in time: their safety-net poll comes after the 10 s each wait allows.
        const slow = { pollingInterval: "1 minute", notifyHealthyPollingInterval: "1 minute" }
        const outcomes = yield* Effect.gen(function* () {
          yield* Workers.start({ url, schema, options: slow })
          yield* Workers.start({ url, schema, options: slow })
          const { balance } = yield* Domain.definitions
          const store = yield* EventStore.EventStore
          return yield* Effect.forEach(
            Writer.streams(20),
            (accountId, i) =>
              Effect.gen(function* () {
                yield* store.append(accountId, [Domain.Deposited.make({ accountId, amount: i + 1, tag: `b${i}` })])
                const { row, sync } = yield* SyncAwareLens.getById(
                  balance,
                  accountId,
                  SyncFilter.forStream(accountId).withTimeout(Duration.seconds(10))
                )
                return { outcome: sync._tag, total: Option.map(row, (r) => r.data.total), expected: i + 1 }
              }),
            { concurrency: 4 }
          )
        }).pipe(Effect.provide(Writer.layer(url, schema)))
        expect(outcomes.filter((o) => o.outcome !== "Synced" && o.outcome !== "NoPendingEvents")).toEqual([])
        expect(outcomes.map((o) => o.total)).toEqual(outcomes.map((o) => Option.some(o.expected)))
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    60_000
  )

  it.live(
    "(c) a write-side process whose workers run elsewhere holds none of its appends once they are applied: 2,000 events, 4 writers, 2 worker processes",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "front_c"
        const result = yield* Effect.gen(function* () {
          const workers = [yield* Workers.start({ url, schema }), yield* Workers.start({ url, schema })]
          const store = yield* EventStore.EventStore
          const tracker = yield* SyncEventTracker.SyncEventTracker
          const streamIds = Writer.streams(50)
          const ids = (yield* Effect.forEach(
            Array.from({ length: 4 }, (_, a) => a),
            (a) =>
              Effect.forEach(
                Array.from({ length: 250 }, (_, i) => i),
                (i) => {
                  const accountId = streamIds[(a * 250 + i) % streamIds.length]!
                  const events = [0, 1].map((k) => Domain.Deposited.make({ accountId, amount: 1, tag: `c${a}.${i}.${k}` }))
                  return Effect.map(store.append(accountId, events), (r) => r.events.map((e) => e.eventId))
                }
              ),
            { concurrency: "unbounded" }
          )).flat(2)
          yield* Workers.settle(
            workers,
            Effect.map(Writer.counts, (c) => c.work)
          )
          // Nobody waited for these events: only the completions' notifications can have told this process's tracker.
          const released = yield* tracker.waitForAllPerspectives(ids, { timeout: Duration.seconds(10) })
          return { appended: ids.length, released, stats: yield* tracker.stats }
        }).pipe(Effect.provide(Writer.layer(url, schema)))
        expect(result.appended).toBe(2_000)
        expect(result.released).toBe(true)
        expect(result.stats.tracked).toBe(0)
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    60_000
  )
})
