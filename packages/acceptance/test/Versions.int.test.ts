// Changing a perspective on a live service, through the front door: two instances run balance v1 with a history of
// 20,000 events; two more instances of a new deploy run v1 and v2 while appends go on; v2 is rebuilt from history,
// cut over automatically, rolled back and cut over again. Composed only from `whizbang` (workers in their own
// processes, the test's side with `Whizbang.layerWithoutWorker`, which declares v1 only: an old appender).
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Duration, Effect, Fiber, Option, Schedule } from "effect"
import { EventId, EventStore, PerspectiveStore, PgClient, PgPerspectiveVersions, SyncAwareLens, SyncFilter, SyncResult } from "whizbang"
import * as Domain from "./support/domain.js"
import * as Workers from "./support/workers.js"
import * as Writer from "./support/writer.js"

const liveVersionOf = (baseName: string) =>
  Effect.map(PgPerspectiveVersions.list, (versions) => versions.find((v) => v.baseName === baseName && v.state === "live"))

describe("perspective versions through the front door", () => {
  it.live(
    "v2 is rebuilt beside v1 under live appends on 4 instances: v2 equals the fold, v1 served every read, no read mixed versions, every receptor fired once; rollback and cutover switch reads",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "front_versions"
        const result = yield* Effect.gen(function* () {
          const store = yield* PerspectiveStore.PerspectiveStore
          const old = [
            yield* Workers.start({ url, schema, perspectives: ["balance", "activity"], effects: true }),
            yield* Workers.start({ url, schema, perspectives: ["balance", "activity"], effects: true })
          ]
          const streamIds = Writer.streams(200)
          const history = yield* Writer.appendConcurrently({ streamIds, appenders: 10, perAppender: 2_000, batch: 20 })
          yield* Workers.settle(
            old,
            Effect.map(Writer.counts, (c) => c.work)
          )

          // Readers through the store port while everything below runs: each read is one getMany of 50 accounts.
          const reads = { total: 0, errors: 0, mixed: 0, v1: 0, v2: 0 }
          let reading = true
          const sample = streamIds.slice(0, 50)
          const reader = yield* Effect.forkChild(
            Effect.gen(function* () {
              while (reading) {
                const rows = yield* Effect.result(store.getMany("balance", sample))
                reads.total++
                if (rows._tag === "Failure") {
                  reads.errors++
                  continue
                }
                const shapes = new Set([...rows.success.values()].map((r) => (r.data as { shape?: string }).shape ?? "v1"))
                if (shapes.size > 1) reads.mixed++
                if (shapes.has("v1")) reads.v1++
                if (shapes.has("v2")) reads.v2++
                yield* Effect.yieldNow
              }
            })
          )
          // Read-your-writes through the lens the whole time (rebuild, cutover, rollback, cutover again): a deposit to
          // a fresh account, wait, read; the row must hold it, whichever version serves.
          const ryw = {
            n: 0,
            stale: 0,
            notFresh: 0,
            outcomes: {} as Record<string, number>,
            // What each wait that was not fresh saw: its outcome, how long it took, and which version was live after it.
            misses: [] as Array<{ tag: string; millis: number; pending: number; live: string | undefined }>,
            slowest: 0
          }
          let writing = true
          const { balance } = yield* Domain.definitions
          const writer = yield* Effect.forkChild(
            Effect.gen(function* () {
              while (writing) {
                const id = EventId.unsafeMake()
                const amount = 1 + (ryw.n % 97)
                yield* EventStore.append(id, [Domain.Deposited.make({ accountId: id, amount, tag: `ryw.${ryw.n}` })])
                // The wait's timeout is generous: this test claims freshness, not latency (on 2 cores running three
                // such files at once, one wait of the default 5 s once timed out behind the rebuild's CPU load).
                const { row, sync } = yield* SyncAwareLens.getById(balance, id, SyncFilter.forStream(id).withTimeout(Duration.seconds(30)))
                ryw.n++
                ryw.outcomes[sync._tag] = (ryw.outcomes[sync._tag] ?? 0) + 1
                ryw.slowest = Math.max(ryw.slowest, Duration.toMillis(sync.elapsed))
                if (!SyncResult.isFresh(sync)) {
                  ryw.notFresh++
                  ryw.misses.push({
                    tag: sync._tag,
                    millis: Duration.toMillis(sync.elapsed),
                    pending: sync.pending.length,
                    live: (yield* liveVersionOf("balance"))?.perspectiveName
                  })
                }
                if (Option.getOrUndefined(row)?.data.total !== amount) ryw.stale++
              }
            })
          )
          // Appends at a steady pace during the rebuild: 4 appenders, one event per append.
          const live = yield* Effect.forkChild(Writer.appendConcurrently({ streamIds, appenders: 4, perAppender: 500, batch: 1 }))
          const deploy = [
            yield* Workers.start({ url, schema, perspectives: ["balance", "activity", "balance__v2"], effects: true }),
            yield* Workers.start({ url, schema, perspectives: ["balance", "activity", "balance__v2"], effects: true })
          ]
          // The new instances cut over on their own once v2 is caught up.
          const cutAt = yield* liveVersionOf("balance").pipe(
            Effect.repeat({ until: (v) => v?.perspectiveName === "balance__v2", schedule: Schedule.spaced("50 millis"), times: 1_200 })
          )
          const appendedLive = yield* Fiber.join(live)
          const workers = [...old, ...deploy]
          yield* Workers.settle(
            workers,
            Effect.map(Writer.counts, (c) => c.work)
          )
          reading = false
          yield* Fiber.join(reader)

          // Rollback and cutover again, timed; reads follow each switch.
          const back = yield* PgPerspectiveVersions.rollback("balance")
          const afterBack = yield* store.getMany("balance", sample)
          const again = yield* PgPerspectiveVersions.cutover("balance", 2)
          const afterAgain = yield* store.getMany("balance", sample)
          writing = false
          yield* Fiber.join(writer)
          yield* Workers.settle(
            workers,
            Effect.map(Writer.counts, (c) => c.work)
          )
          const effects = workers.flatMap((w) => w.effects())
          const fired = new Map<string, number>()
          for (const id of effects) fired.set(id, (fired.get(id) ?? 0) + 1)
          return {
            appended: history + appendedLive + ryw.n,
            ryw,
            cutAt,
            reads,
            back,
            again,
            afterBack: [...afterBack.values()].map((r) => (r.data as { shape?: string }).shape ?? "v1"),
            afterAgain: [...afterAgain.values()].map((r) => (r.data as { shape?: string }).shape ?? "v1"),
            fired,
            counts: yield* Writer.counts,
            balance: yield* Writer.mismatches("balance"),
            balanceV2: yield* Writer.mismatches("balance__v2"),
            activity: yield* Writer.mismatches("activity"),
            versions: yield* PgPerspectiveVersions.list,
            // v2's history went through the replay (PgHistoryReplay): it started, and no history is left planned.
            replay: (yield* Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
              client.query<{ started: boolean; planned: number }>(
                `SELECT replay_started_at IS NOT NULL AS started,
                        (SELECT count(*)::int FROM wh_perspective_backfill WHERE perspective_name = 'balance__v2') AS planned
                 FROM wh_perspective_versions WHERE perspective_name = 'balance__v2'`
              )
            ))[0]
          }
        }).pipe(Effect.provide(Writer.layer(url, schema)))
        const repeated = [...result.fired.values()].filter((n) => n > 1).length
        console.log(
          `versions: ${result.appended} events; read-your-writes ${result.ryw.n} (${JSON.stringify(result.ryw.outcomes)}, stale ${result.ryw.stale}, slowest wait ${Math.round(result.ryw.slowest)} ms); reads ${result.reads.total} (v1 ${result.reads.v1}, v2 ${result.reads.v2}, mixed ${result.reads.mixed}, errors ${result.reads.errors}); ` +
            `rollback ${result.back.millis} ms, cutover ${result.again.millis} ms; receptor firings ${[...result.fired.values()].reduce((a, b) => a + b, 0)} for ${result.fired.size} events, repeated ${repeated}`
        )
        expect(result.counts).toEqual({ events: 22_000 + result.ryw.n, work: 0, dead_letters: 0 })
        // Read-your-writes across the rebuild, both cutovers and the rollback: every wait fresh (Synced, or
        // NoPendingEvents when the event was applied before the wait's first check), no read stale.
        expect(result.ryw.n).toBeGreaterThan(0)
        expect(result.ryw).toMatchObject({ stale: 0, notFresh: 0, misses: [] })
        expect(result.balanceV2).toBe(0)
        expect(result.balance).toBe(0)
        expect(result.activity).toBe(0)
        expect(result.reads.errors).toBe(0)
        expect(result.reads.mixed).toBe(0)
        expect(result.reads.v1).toBeGreaterThan(0)
        // Every event fired the receptor exactly once: the history was not replayed into it, new events fired once.
        expect(result.fired.size).toBe(22_000 + result.ryw.n)
        expect(repeated).toBe(0)
        expect(result.back).toMatchObject({ live: "balance", replaced: "balance__v2", switched: true })
        expect(result.afterBack.every((s) => s === "v1")).toBe(true)
        expect(result.again).toMatchObject({ live: "balance__v2", replaced: "balance", switched: true })
        expect(result.afterAgain.every((s) => s === "v2")).toBe(true)
        expect(result.cutAt?.perspectiveName).toBe("balance__v2")
        expect(result.replay).toEqual({ started: true, planned: 0 })
        expect(result.versions.map((v) => [v.perspectiveName, v.state])).toEqual([
          ["activity", "live"],
          ["balance", "retiring"],
          ["balance__v2", "live"]
        ])
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )
})
