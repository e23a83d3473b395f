// History replay through the front door (`Whizbang.layer` / `Whizbang.layerBuilder` in their own processes; this
// process appends with `Whizbang.layerWithoutWorker`, declaring v1 only): the hand-over from replayed history to live
// events under racing appends, resumption after kill -9 at random points, and two builders replaying at once.
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Effect, Fiber } from "effect"
import { EventStore, PgClient } from "whizbang"
import * as Domain from "./support/domain.js"
import * as Replayers from "./support/replayers.js"
import * as Writer from "./support/writer.js"

const sql = <Row extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (client) => client.query<Row>(text, params))

const key = "balance__v2"

/** Streams of v2's history still planned. */
const planned = Effect.map(
  sql<{ n: number }>("SELECT count(*)::int AS n FROM wh_perspective_backfill WHERE perspective_name = $1", [key]),
  (rows) => rows[0]!.n
)

/** Events of the streams still planned (through their planned event): what a replay from here applies. */
const plannedEvents = Effect.map(
  sql<{ n: number }>(
    `SELECT count(*)::int AS n FROM wh_perspective_backfill b
     JOIN wh_events e ON e.stream_id = b.stream_id AND e.event_id <= b.through_event_id
     WHERE b.perspective_name = $1 AND e.event_type IN ('Deposited', 'Withdrawn')`,
    [key]
  ),
  (rows) => rows[0]!.n
)

/** v2's history as registered. */
const history = Effect.map(
  sql<{ streams: number; events: string }>(
    "SELECT backfill_streams AS streams, backfill_events AS events FROM wh_perspective_versions WHERE perspective_name = $1",
    [key]
  ),
  (rows) => ({ streams: rows[0]?.streams ?? 0, events: Number(rows[0]?.events ?? 0) })
)

/** v2 rows whose version (events applied to them) is not the stream's event count: a stream applied twice, or not all. */
const misapplied = Effect.map(
  sql<{ n: number }>(`
    SELECT count(*)::int AS n FROM wh_per_balance__v2 p
    JOIN (SELECT stream_id, count(*) AS n FROM wh_events GROUP BY stream_id) f ON f.stream_id = p.id
    WHERE p.version <> f.n`),
  (rows) => rows[0]!.n
)

/** Polls `check` every 5 ms until it holds; fails after `timeoutMs`. */
const until = <E, R>(check: Effect.Effect<boolean, E, R>, what: string, timeoutMs = 90_000) =>
  Effect.gen(function* () {
    const started = Date.now()
    while (!(yield* check)) {
      if (Date.now() - started > timeoutMs) return yield* Effect.fail(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("5 millis")
    }
  })

const registered = Effect.map(
  sql<{ n: number }>("SELECT count(*)::int AS n FROM wh_perspective_versions WHERE perspective_name = $1", [key]),
  (rows) => rows[0]!.n > 0
)

describe("history replay through the front door", () => {
  it.live(
    "appends race v2's registration and the replay's last chunks: v2, v1 and activity each equal the fold, no event applied twice, history replayed without work rows",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "replay_race"
        const result = yield* Effect.gen(function* () {
          const streamIds = Writer.streams(60)
          yield* Writer.appendConcurrently({ streamIds, appenders: 6, perAppender: 300, batch: 5 })
          // Live appends on the same streams from here to the end: through the registration and every chunk.
          let appending = true
          let live = 0
          const store = yield* EventStore.EventStore
          const appenders = yield* Effect.forkChild(
            Effect.forEach(
              [0, 1, 2, 3],
              (a) =>
                Effect.gen(function* () {
                  for (let i = 0; appending; i++) {
                    const accountId = streamIds[(a * 13 + i * 7) % streamIds.length]!
                    const payload = { accountId, amount: 1 + (i % 9), tag: `live.${a}.${i}` }
                    yield* store.append(accountId, [i % 3 === 0 ? Domain.Withdrawn.make(payload) : Domain.Deposited.make(payload)])
                    live++
                  }
                }),
              { concurrency: "unbounded", discard: true }
            )
          )
          yield* until(
            Effect.sync(() => live >= 50),
            "live appends"
          )
          // One stream per chunk (10 events a chunk): about 60 chunks, each racing the appends to its streams.
          const instance = yield* Replayers.start({ url, schema, role: "serve", versions: { replayChunkEvents: 10 } })
          yield* until(registered, "v2 registered")
          yield* until(
            Effect.map(planned, (n) => n === 0),
            "v2's history replayed"
          )
          const after = live
          yield* until(
            Effect.sync(() => live >= after + 100),
            "appends after the replay"
          )
          appending = false
          yield* Fiber.join(appenders)
          yield* until(
            Effect.map(Writer.counts, (c) => c.work === 0),
            "the worker drained"
          )
          return {
            live,
            history: yield* history,
            replayed: (yield* instance.stats)[key],
            counts: yield* Writer.counts,
            v2: yield* Writer.mismatches("balance__v2"),
            balance: yield* Writer.mismatches("balance"),
            activity: yield* Writer.mismatches("activity"),
            misapplied: yield* misapplied
          }
        }).pipe(Effect.provide(Writer.layer(url, schema)))
        expect(result.history.events).toBeGreaterThan(1_800)
        // Every history event went through the replay (none as a work row), every later one through the worker.
        expect(result.replayed).toBe(result.history.events)
        expect(result.counts).toMatchObject({ events: 1_800 + result.live, work: 0, dead_letters: 0 })
        expect(result).toMatchObject({ v2: 0, balance: 0, activity: 0, misapplied: 0 })
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )

  it.live(
    "kill -9 of the replaying instance at random points: the next one resumes from the last committed chunk, every fold exact, nothing applied twice",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "replay_kill"
        const result = yield* Effect.gen(function* () {
          yield* Writer.appendConcurrently({ streamIds: Writer.streams(600), appenders: 10, perAppender: 600, batch: 5 })
          const versions = { replayChunkEvents: 20, autoCutover: false }
          // Each round: an instance replays until somewhere between a tenth and a half of what is left is done, and is
          // killed; the next round's instance resumes.
          const kills: Array<{ readonly before: number; readonly atKill: number; readonly resumedMs: number | undefined }> = []
          let killedAt: number | undefined
          for (let round = 0; round < 3; round++) {
            const builder = yield* Replayers.start({ url, schema, role: "builder", versions })
            yield* until(registered, "v2 registered")
            const before = yield* planned
            const atKillBefore = kills.at(-1)?.atKill
            yield* until(
              Effect.map(planned, (n) => n < before),
              "the first chunk"
            )
            const resumedMs = killedAt === undefined ? undefined : Date.now() - killedAt
            const target = Math.max(1, Math.floor(before * (0.1 + 0.4 * Math.random())))
            yield* until(
              Effect.map(planned, (n) => n <= before - target),
              "replay progress"
            )
            yield* builder.kill
            killedAt = Date.now()
            kills.push({ before: atKillBefore ?? before, atKill: yield* planned, resumedMs })
            // What the killed instance committed stays: the next one starts there.
            if (atKillBefore !== undefined) expect(before).toBe(atKillBefore)
          }
          const remainingEvents = yield* plannedEvents
          const last = yield* Replayers.start({ url, schema, role: "builder", versions })
          yield* until(
            Effect.map(planned, (n) => n === 0),
            "v2's history replayed"
          )
          return {
            kills,
            remainingEvents,
            lastReplayed: (yield* last.stats)[key],
            history: yield* history,
            v2: yield* Writer.mismatches("balance__v2"),
            misapplied: yield* misapplied,
            cursors: (yield* sql<{ n: number }>("SELECT count(*)::int AS n FROM wh_perspective_cursors WHERE perspective_name = $1", [
              key
            ]))[0]!.n
          }
        }).pipe(Effect.provide(Writer.layer(url, schema)))
        console.log(
          `replay kill -9: ${result.history.streams} streams; ${result.kills.map((k) => `${k.before} planned -> killed at ${k.atKill}${k.resumedMs === undefined ? "" : ` (first chunk ${k.resumedMs} ms after the kill before)`}`).join("; ")}; the last instance replayed ${result.lastReplayed} of ${result.history.events} events`
        )
        for (const k of result.kills) {
          expect(k.atKill).toBeLessThan(k.before)
          expect(k.atKill).toBeGreaterThan(0)
        }
        // The last instance replayed exactly what was still planned: nothing re-applied, less than the whole history.
        expect(result.lastReplayed).toBe(result.remainingEvents)
        expect(result.lastReplayed).toBeLessThan(result.history.events)
        expect(result).toMatchObject({ v2: 0, misapplied: 0, cursors: result.history.streams })
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    180_000
  )

  it.live(
    "two builders replaying at once, two replayers each: no stream written twice, together exactly the history",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "replay_fence"
        const result = yield* Effect.gen(function* () {
          yield* Writer.appendConcurrently({ streamIds: Writer.streams(600), appenders: 10, perAppender: 600, batch: 10 })
          const versions = { replayChunkEvents: 20, replayConcurrency: 2, autoCutover: false }
          const a = yield* Replayers.start({ url, schema, role: "builder", versions })
          const b = yield* Replayers.start({ url, schema, role: "builder", versions })
          yield* until(registered, "v2 registered")
          yield* until(
            Effect.map(planned, (n) => n === 0),
            "v2's history replayed"
          )
          return {
            a: (yield* a.stats)[key]!,
            b: (yield* b.stats)[key]!,
            history: yield* history,
            v2: yield* Writer.mismatches("balance__v2"),
            misapplied: yield* misapplied
          }
        }).pipe(Effect.provide(Writer.layer(url, schema)))
        console.log(`replay fencing: builder a replayed ${result.a}, b ${result.b} of ${result.history.events} events`)
        expect(result.a).toBeGreaterThan(0)
        expect(result.b).toBeGreaterThan(0)
        expect(result.a + result.b).toBe(result.history.events)
        expect(result).toMatchObject({ v2: 0, misapplied: 0 })
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )
})
