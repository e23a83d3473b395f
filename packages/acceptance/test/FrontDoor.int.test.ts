// The front door under ordinary concurrency: several writers on the same streams, two worker processes, every
// read model checked against the fold computed by SQL from `wh_events` alone. Composed only from `whizbang`,
// as the README composes it (the database comes from @whizbang/testing).
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Deferred, Duration, Effect, Fiber, Option, Schedule } from "effect"
import { EventStore, PgClient, SyncAwareLens, SyncEventTracker, SyncFilter } from "whizbang"
import * as Domain from "./support/domain.js"
import * as Readers from "./support/readers.js"
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

  it.live(
    "(d) streams held by a caller's open transaction and a 5,000-event append hold up no other writer: 8 writers, 2 worker processes, every fold exact",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "front_d"
        const result = yield* Effect.gen(function* () {
          const workers = [yield* Workers.start({ url, schema }), yield* Workers.start({ url, schema })]
          const store = yield* EventStore.EventStore
          const client = yield* Effect.service(PgClient.PgClient)
          // Three streams, so appends waiting for their locks outnumber the store's statements in flight.
          const held = Writer.streams(3)
          const [bulk] = Writer.streams(1) as [string]
          for (const accountId of held) yield* store.append(accountId, [Domain.Deposited.make({ accountId, amount: 1, tag: "d.first" })])
          // A caller's transaction appends to the held streams (taking their locks) and stays open until released.
          const locked = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const transaction = yield* Effect.forkChild(
            client.withTransaction(
              Effect.gen(function* () {
                for (const accountId of held)
                  yield* store.append(accountId, [Domain.Deposited.make({ accountId, amount: 2, tag: "d.in-transaction" })])
                yield* Deferred.succeed(locked, undefined)
                yield* Deferred.await(release)
              })
            )
          )
          yield* Deferred.await(locked)
          // Other writers append to the held streams: they wait for the locks, and only for them.
          const behindLock = yield* Effect.forkChild(
            Effect.forEach(
              held,
              (accountId) => store.append(accountId, [Domain.Deposited.make({ accountId, amount: 3, tag: "d.behind-lock" })]),
              { concurrency: "unbounded" }
            )
          )
          // All three are waiting for their locks in the server before anyone else appends.
          const waiting = client
            .query<{ n: string }>(
              "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%wh_append%' AND datname = current_database()"
            )
            .pipe(Effect.map(([row]) => Number(row!.n)))
          yield* Effect.repeat(waiting, {
            until: (n) => n >= held.length || behindLock.pollUnsafe() !== undefined,
            schedule: Schedule.spaced("5 millis")
          })
          const bulkAppend = yield* Effect.forkChild(
            store.append(
              bulk,
              Array.from({ length: 5_000 }, (_, i) => Domain.Deposited.make({ accountId: bulk, amount: 1, tag: `d.bulk${i}` }))
            )
          )
          // 8 writers, 1,600 events on 100 other streams, while the transaction is open. A lock wait among them
          // would hold them until the timeout.
          const others = yield* Writer.appendConcurrently({
            streamIds: Writer.streams(100),
            appenders: 8,
            perAppender: 200,
            batch: 1
          }).pipe(Effect.timeoutOption("30 seconds"))
          const behindLockWhileHeld = behindLock.pollUnsafe()
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(transaction)
          const afterLock = yield* Fiber.join(behindLock)
          yield* Fiber.join(bulkAppend)
          yield* Workers.settle(
            workers,
            Effect.map(Writer.counts, (c) => c.work)
          )
          return {
            others,
            behindLockWhileHeld,
            afterLock: afterLock.map((r) => r.nextExpectedVersion),
            counts: yield* Writer.counts,
            balance: yield* Writer.mismatches("balance"),
            activity: yield* Writer.mismatches("activity")
          }
        }).pipe(Effect.provide(Writer.layer(url, schema)))
        expect(result.others, "the other writers finished while the transaction held its stream").toEqual(Option.some(1_600))
        expect(result.behindLockWhileHeld, "the appends to the held streams waited for the locks").toBeUndefined()
        expect(result.afterLock).toEqual([3, 3, 3])
        expect(result.counts).toEqual({ events: 1_600 + 5_000 + 9, work: 0, dead_letters: 0 })
        expect(result.balance).toBe(0)
        expect(result.activity).toBe(0)
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    90_000
  )

  it.live(
    "(e) read-your-writes with many reads in flight: 16 writers on 30 shared streams, 2 worker processes, 800 append-wait-read requests, no stale read",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "front_e"
        const results = yield* Effect.gen(function* () {
          yield* Workers.start({ url, schema })
          yield* Workers.start({ url, schema })
          const { balance } = yield* Domain.definitions
          const store = yield* EventStore.EventStore
          const streamIds = Writer.streams(30)
          // Reads by id go together while two statements are in flight: each must still see its own append.
          return yield* Effect.forEach(
            Array.from({ length: 800 }, (_, i) => i),
            (i) =>
              Effect.gen(function* () {
                const accountId = streamIds[i % streamIds.length]!
                const appended = yield* store.append(accountId, [Domain.Deposited.make({ accountId, amount: 1, tag: `e${i}` })])
                const { row, sync } = yield* SyncAwareLens.getById(
                  balance,
                  accountId,
                  SyncFilter.forStream(accountId).withTimeout(Duration.seconds(20))
                )
                return { outcome: sync._tag, version: Option.map(row, (r) => r.version), appended: appended.events[0]!.streamVersion }
              }),
            { concurrency: 16 }
          )
        }).pipe(Effect.provide(Writer.layer(url, schema)))
        expect(results.filter((r) => r.outcome !== "Synced" && r.outcome !== "NoPendingEvents")).toEqual([])
        const stale = results.filter((r) => Option.getOrElse(r.version, () => 0) < r.appended)
        expect(stale).toEqual([])
        expect(results.length).toBe(800)
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )

  it.live(
    "(f) read-your-writes across instances: one process appends, another (its tracker never saw the append) reads with SyncFilter.forStream, 2 worker processes, 300 requests, no stale read",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "front_f"
        const results = yield* Effect.gen(function* () {
          yield* Workers.start({ url, schema })
          yield* Workers.start({ url, schema })
          // The instance a load balancer sends the read to.
          const reader = yield* Readers.start({ url, schema })
          const store = yield* EventStore.EventStore
          const streamIds = Writer.streams(20)
          return yield* Effect.forEach(
            Array.from({ length: 300 }, (_, i) => i),
            (i) =>
              Effect.gen(function* () {
                const accountId = streamIds[i % streamIds.length]!
                const appended = yield* store.append(accountId, [Domain.Deposited.make({ accountId, amount: 1, tag: `f${i}` })])
                return { ...(yield* reader.read(accountId)), appended: appended.events[0]!.streamVersion }
              }),
            { concurrency: 8 }
          )
        }).pipe(Effect.provide(Writer.layer(url, schema)), Effect.scoped)
        expect(results.filter((r) => r.outcome !== "Synced" && r.outcome !== "NoPendingEvents")).toEqual([])
        expect(results.filter((r) => r.version < r.appended)).toEqual([])
        expect(results.length).toBe(300)
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )
})
