// The replay of history through `Whizbang.layer` / `Whizbang.layerBuilder`: a stream whose history cannot be folded
// takes the work-row path (and dead-letters as always) while the others are replayed; an instance with
// `versions.replay: "off"` never replays, a builder does, and readiness does not wait for it; the options are checked.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Metric, Schema } from "effect"
import {
  EventId,
  EventRegistry,
  EventStore,
  Perspective,
  PerspectiveWorker,
  PgHealth,
  PgHistoryReplay,
  PgPerspectiveVersions,
  Whizbang
} from "whizbang"
import * as Fixtures from "./fixtures.js"

const events = EventRegistry.make([Fixtures.Deposited])

const config = (url: string, perspectives: ReadonlyArray<Perspective.Any>, extra: Partial<Whizbang.Config> = {}): Whizbang.Config => ({
  databaseUrl: url,
  schema: "replay",
  events,
  perspectives,
  options: Fixtures.fast,
  watchdog: { interval: null },
  versions: { interval: "20 millis" },
  ...extra
})

const { deposit, sql, withDatabase } = Fixtures

/** This process's count of history events replayed for `key` (the counter is process-wide: read before and after). */
const replayed = (key: string) =>
  Effect.map(Metric.value(Metric.withAttributes(PgHistoryReplay.replayedEventsCounter, { perspective: key })), (s) => Number(s.count))

const planned = (key: string) =>
  Effect.map(
    sql<{ n: number }>("SELECT count(*)::int AS n FROM wh_perspective_backfill WHERE perspective_name = $1", [key]),
    (r) => r[0]!.n
  )

/** `key`'s dead letters, work rows and planned streams. */
const leftOver = (key: string) =>
  Effect.map(
    sql<{ dead: number; work: number; planned: number }>(
      `SELECT (SELECT count(*) FROM wh_dead_letters WHERE perspective_name = $1)::int AS dead,
              (SELECT count(*) FROM wh_perspective_events WHERE perspective_name = $1)::int AS work,
              (SELECT count(*) FROM wh_perspective_backfill WHERE perspective_name = $1)::int AS planned`,
      [key]
    ),
    (r) => r[0]!
  )

/** Polls `check` every 10 ms until it holds; fails after 30 s. */
const until = <E, R>(check: Effect.Effect<boolean, E, R>, what: string) =>
  Effect.gen(function* () {
    const started = Date.now()
    while (!(yield* check)) {
      if (Date.now() - started > 30_000) return yield* Effect.fail(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("10 millis")
    }
  })

const picky = Perspective.make({
  name: "balance",
  version: 2,
  events: [Fixtures.Deposited],
  model: Schema.Struct({ total: Schema.Number }),
  initial: { total: 0 },
  apply: {
    Deposited: (m, e) => {
      if (e.payload.amount === 13) throw new Error("v2 refuses 13")
      return { total: m.total + e.payload.amount }
    }
  }
})

/** v1 and v2 of `balance` served by one `Whizbang.layer`, a refused event dead-lettered on its first attempt. */
const pickyLayer = (url: string) =>
  Whizbang.layer(config(url, [Fixtures.balance, picky], { options: { ...Fixtures.fast, maxPerspectiveEventAttempts: 1 } }))

/** v2's rows: each stream's total and version. */
const v2Rows = sql<{ id: string; total: number; version: number }>(
  "SELECT id::text, (data->>'total')::int AS total, version::int FROM wh_per_balance__v2 ORDER BY total, id"
)

describe("history replay (Whizbang.layer)", () => {
  it.live("a failing event's stream takes the work-row path and dead-letters it; the other streams are replayed", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const bad = EventId.unsafeMake()
        const good = [EventId.unsafeMake(), EventId.unsafeMake(), EventId.unsafeMake()]
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* deposit(bad, 13)
            yield* deposit(bad, 2)
            for (const id of good) for (const amount of [1, 2, 3]) yield* deposit(id, amount)
            yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitIdle
          }).pipe(Effect.provide(Whizbang.layer(config(url, [Fixtures.balance]))))
        )
        const before = yield* replayed("balance__v2")
        const result = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* until(
              Effect.map(leftOver("balance__v2"), (r) => r.dead === 1 && r.work === 0),
              "the dead letter, then the stream's last event"
            )
            return {
              rows: yield* v2Rows,
              dead: yield* sql<{ stream_id: string }>("SELECT stream_id::text FROM wh_dead_letters WHERE perspective_name = 'balance__v2'"),
              planned: yield* planned("balance__v2"),
              v2: (yield* PgPerspectiveVersions.list).find((v) => v.perspectiveName === "balance__v2")
            }
          }).pipe(Effect.provide(pickyLayer(url)))
        )
        // The good streams were replayed (3 events each, no work row); the bad one went to the worker: 13 dead-lettered,
        // then 2 applied.
        expect((yield* replayed("balance__v2")) - before).toBe(9)
        expect(result.dead).toEqual([{ stream_id: bad }])
        expect(result.rows.map((r) => [r.id, r.total, r.version])).toEqual([
          [bad, 2, 1],
          ...good.map((id) => [id, 6, 3]).sort((a, b) => String(a[0]).localeCompare(String(b[0])))
        ])
        expect(result.planned).toBe(0)
        // Not live: its dead letter keeps it from going live (a hand-over that began before it gives up again).
        expect(result.v2).toMatchObject({ deadLetters: 1 })
        expect(["building", "ready"]).toContain(result.v2?.state)
      })
    )
  )

  it.live("a chunk of several pieces (2,510 events of 251 streams, read and folded 100 streams at a time) is replayed exactly", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        // 10 events a stream: a chunk of 5,000 events takes all 251 streams, and its pieces of 1,000 events 100 each.
        const amounts = Array.from({ length: 10 }, (_, i) => i + 1)
        const good = Array.from({ length: 250 }, () => EventId.unsafeMake())
        const bad = EventId.unsafeMake()
        const append = (id: string, values: ReadonlyArray<number>) =>
          Effect.flatMap(EventStore.EventStore, (store) =>
            store.append(
              id,
              values.map((amount) => Fixtures.Deposited.make({ accountId: id, amount }))
            )
          )
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* Effect.forEach(good, (id) => append(id, amounts), { concurrency: 8, discard: true })
            // The failing stream: 13 refused by v2, among nine others.
            yield* append(bad, [1, 2, 3, 4, 13, 6, 7, 8, 9, 10])
            yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitIdle
          }).pipe(Effect.provide(Whizbang.layer(config(url, [Fixtures.balance]))))
        )
        const before = yield* replayed("balance__v2")
        const result = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* until(
              Effect.map(leftOver("balance__v2"), (r) => r.dead === 1 && r.work === 0 && r.planned === 0),
              "the history replayed, the failing stream dead-lettered and drained"
            )
            return yield* v2Rows
          }).pipe(Effect.provide(pickyLayer(url)))
        )
        // 250 streams folded by the replay (10 events each); the failing one by the worker, its 13 dead-lettered.
        expect((yield* replayed("balance__v2")) - before).toBe(2_500)
        const byId = new Map(result.map((r) => [r.id, r]))
        expect(good.filter((id) => byId.get(id)?.total !== 55 || byId.get(id)?.version !== 10)).toEqual([])
        expect(byId.get(bad)).toMatchObject({ total: 50, version: 9 })
        expect(result.length).toBe(251)
      })
    )
  )

  it.live('an instance with versions.replay "off" does not replay; a builder does, and readiness does not wait for it', () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const ids = [EventId.unsafeMake(), EventId.unsafeMake()]
        yield* Effect.scoped(
          Effect.gen(function* () {
            for (const id of ids) for (const amount of [4, 5]) yield* deposit(id, amount)
            yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitIdle
          }).pipe(Effect.provide(Whizbang.layer(config(url, [Fixtures.balance]))))
        )
        const v2 = Fixtures.balanceVersion(2)
        const before = yield* replayed("balance__v2")
        const serving = yield* Effect.scoped(
          Effect.gen(function* () {
            const worker = yield* PerspectiveWorker.PerspectiveWorker
            // Many rounds of the version loop (every 20 ms) and of the worker: the history stays planned.
            yield* worker.awaitPolls(20)
            yield* deposit(ids[0]!, 1)
            yield* worker.awaitPolls(20)
            return {
              planned: yield* planned("balance__v2"),
              health: yield* PgHealth.check({ heartbeatMaxAge: null }),
              v2: (yield* PgPerspectiveVersions.list).find((v) => v.perspectiveName === "balance__v2")
            }
          }).pipe(
            Effect.provide(Whizbang.layer(config(url, [Fixtures.balance, v2], { versions: { interval: "20 millis", replay: "off" } })))
          )
        )
        expect(serving.planned).toBe(2)
        expect((yield* replayed("balance__v2")) - before).toBe(0)
        expect(serving.v2).toMatchObject({ state: "building", streamsToReplay: 2 })
        expect(serving.health.status).toBe("healthy")
        // A builder (no worker) replays it and cuts over; the live event routed to v2 is applied by a serving instance.
        const built = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* until(
              Effect.map(planned("balance__v2"), (n) => n === 0),
              "the builder's replay"
            )
            return yield* Effect.scoped(
              Effect.gen(function* () {
                yield* PgPerspectiveVersions.awaitLive("balance__v2", { timeout: "30 seconds", interval: "10 millis" })
                return yield* sql<{ total: number }>("SELECT (data->>'total')::int AS total FROM wh_per_balance ORDER BY 1")
              }).pipe(
                Effect.provide(Whizbang.layer(config(url, [Fixtures.balance, v2], { versions: { interval: "20 millis", replay: "off" } })))
              )
            )
          }).pipe(Effect.provide(Whizbang.layerBuilder(config(url, [Fixtures.balance, v2]))))
        )
        expect((yield* replayed("balance__v2")) - before).toBe(4)
        expect(built).toEqual([{ total: 9 }, { total: 10 }])
      })
    )
  )

  it.live("a plan the planner has not seen is analyzed before its chunks are taken (they walk the plan's index)", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        // 1,200 streams of one event: a plan big enough that its statistics matter.
        const ids = Array.from({ length: 1_200 }, () => EventId.unsafeMake())
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* Effect.forEach(ids, (id) => deposit(id, 1), { concurrency: 8, discard: true })
            yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitIdle
            // Autovacuum stays out of it: the planner's view of the plan table is what the replay leaves there.
            yield* sql("ALTER TABLE wh_perspective_backfill SET (autovacuum_enabled = false)")
          }).pipe(Effect.provide(Whizbang.layer(config(url, [Fixtures.balance]))))
        )
        const v2 = Fixtures.balanceVersion(2)
        const estimate = sql<{ n: number }>(
          "SELECT reltuples::float8 AS n FROM pg_class WHERE oid = to_regclass('wh_perspective_backfill')"
        )
        const seen = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* until(
              Effect.map(planned("balance__v2"), (n) => n === 0),
              "the builder's replay"
            )
            return (yield* estimate)[0]!.n
          }).pipe(Effect.provide(Whizbang.layerBuilder(config(url, [Fixtures.balance, v2]))))
        )
        // Taken when the replay began (1,200 rows), not -1 (never analyzed) or 0.
        expect(seen).toBeGreaterThanOrEqual(600)
      })
    )
  )

  it.live("replay options are checked at start-up, naming the option; nothing connects", () =>
    Effect.gen(function* () {
      const url = "postgres://nobody@127.0.0.1:1/none"
      const refused = <A, E>(layer: Layer.Layer<A, E>) => Effect.flip(Effect.scoped(Layer.build(layer)))
      const bad = (versions: Record<string, unknown>) =>
        refused(Whizbang.layer(config(url, [Fixtures.balance], { versions: versions as Whizbang.Config["versions"] })))
      const cases = [
        yield* bad({ replay: "sometimes" }),
        yield* bad({ replayConcurrency: 0 }),
        yield* bad({ replayChunkEvents: 1.5 }),
        yield* bad({ liveLagTarget: -1 }),
        yield* refused(Whizbang.layerBuilder(config(url, [Fixtures.balance], { versions: { replay: "off" } })))
      ]
      expect(cases.map((e) => [(e as { _tag: string })._tag, (e as { option: string }).option])).toEqual([
        ["PostgresConfigError", "versions.replay"],
        ["PostgresConfigError", "versions.replayConcurrency"],
        ["PostgresConfigError", "versions.replayChunkEvents"],
        ["PostgresConfigError", "versions.liveLagTarget"],
        ["PostgresConfigError", "versions.replay"]
      ])
      expect((cases[0] as Error).message).toBe('versions.replay must be "auto" or "off", got "sometimes"')
    })
  )
})
