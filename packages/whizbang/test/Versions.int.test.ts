// Perspective versions through `Whizbang.layer`: the upgrade of a pre-versions table, registration racing appends,
// retirement, rolling deploys and the typed errors.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Logger, Schedule, Schema } from "effect"
import { EventId, EventRegistry, Perspective, PerspectiveWorker, PgHealth, PgPerspectiveVersions, PgWatchdog, Whizbang } from "whizbang"
import * as Fixtures from "./fixtures.js"

const events = EventRegistry.make([Fixtures.Deposited])

const app = (url: string, perspectives: ReadonlyArray<Perspective.Any>, config: Partial<Whizbang.Config> = {}) =>
  Whizbang.layer({
    databaseUrl: url,
    schema: "versions",
    events,
    perspectives,
    options: Fixtures.fast,
    watchdog: { interval: null },
    versions: { interval: "20 millis" },
    ...config
  })

const { deposit, sql, withDatabase } = Fixtures

/** Rows of a version's table that differ from the fold of `wh_events` (or exist on one side only). */
const mismatches = (table: string) =>
  Effect.map(
    sql<{ n: number }>(`
      WITH fold AS (SELECT stream_id, sum((payload->>'amount')::numeric) AS total FROM wh_events GROUP BY stream_id)
      SELECT count(*)::int AS n FROM fold FULL JOIN ${table} p ON p.id = fold.stream_id
      WHERE p.id IS NULL OR fold.stream_id IS NULL OR (p.data->>'total')::numeric <> fold.total`),
    (rows) => rows[0]!.n
  )

/** Until the worker is idle with no work row and no history left to plan. */
const settle = Effect.gen(function* () {
  const worker = yield* PerspectiveWorker.PerspectiveWorker
  for (let round = 0; round < 200; round++) {
    yield* worker.awaitIdle
    const [left] = yield* sql<{ n: number }>(
      "SELECT (SELECT count(*) FROM wh_perspective_events) + (SELECT count(*) FROM wh_perspective_backfill) AS n"
    )
    if (Number(left!.n) === 0) return
    yield* Effect.yieldNow
  }
  return yield* Effect.die(new Error("work still pending after 200 idle rounds"))
})

describe("perspective versions (Whizbang.layer)", () => {
  it.live("a table of a release before versions becomes version 1's table behind the view, nothing re-applied", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const id = EventId.unsafeMake()
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* deposit(id, 5)
            yield* deposit(id, 7)
            yield* settle
            // What the release before versions left: a plain table, no registry row.
            yield* sql("DROP VIEW wh_per_balance")
            yield* sql("ALTER TABLE wh_per_balance__v1 RENAME TO wh_per_balance")
            yield* sql("DELETE FROM wh_perspective_versions")
          }).pipe(Effect.provide(app(url, [Fixtures.balance])))
        )
        const after = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* deposit(id, 1)
            yield* settle
            return {
              kinds: yield* sql<{ relname: string; relkind: string }>(
                "SELECT relname, relkind::text FROM pg_class WHERE relname LIKE 'wh_per_balance%' AND relkind IN ('r', 'v') ORDER BY relname"
              ),
              row: yield* sql<{ data: unknown; version: number }>("SELECT data, version::int FROM wh_per_balance"),
              versions: yield* PgPerspectiveVersions.list
            }
          }).pipe(Effect.provide(app(url, [Fixtures.balance])))
        )
        expect(after.kinds).toEqual([
          { relname: "wh_per_balance", relkind: "v" },
          { relname: "wh_per_balance__v1", relkind: "r" }
        ])
        // Applied once each: 3 events, row version 3.
        expect(after.row).toEqual([{ data: { total: 13 }, version: 3 }])
        expect(after.versions).toMatchObject([{ perspectiveName: "balance", state: "live", historyStreams: 0, progress: 1 }])
      })
    )
  )

  it.live("versions registered while 6 appenders append: every version's table is exactly the fold", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const streams = Array.from({ length: 40 }, () => EventId.unsafeMake())
        let appending = true
        let appended = 0
        const appenders = Effect.forEach(
          [0, 1, 2, 3, 4, 5],
          (a) =>
            Effect.gen(function* () {
              let i = 0
              while (appending) {
                yield* deposit(streams[(a * 7 + i++) % streams.length]!, 1 + (i % 5))
                appended++
              }
            }),
          { concurrency: "unbounded", discard: true }
        )
        const v = [Fixtures.balance, Fixtures.balanceVersion(2), Fixtures.balanceVersion(3), Fixtures.balanceVersion(4)]
        const result = yield* Effect.scoped(
          Effect.gen(function* () {
            const writing = yield* Effect.forkChild(appenders)
            // Each deploy registers one more version while the appends go on, and stops again.
            for (let n = 2; n <= 4; n++) {
              while (appended < n * 150) yield* Effect.yieldNow
              yield* Effect.scoped(Layer.build(app(url, v.slice(0, n), { versions: { interval: null } })))
            }
            while (appended < 750) yield* Effect.yieldNow
            appending = false
            yield* Fiber.join(writing)
            return yield* Effect.scoped(
              Effect.gen(function* () {
                yield* settle
                return {
                  v1: yield* mismatches("wh_per_balance__v1"),
                  v2: yield* mismatches("wh_per_balance__v2"),
                  v3: yield* mismatches("wh_per_balance__v3"),
                  v4: yield* mismatches("wh_per_balance__v4"),
                  events: (yield* sql<{ n: number }>("SELECT count(*)::int AS n FROM wh_events"))[0]!.n,
                  versions: yield* PgPerspectiveVersions.list
                }
              }).pipe(Effect.provide(app(url, v, { versions: { interval: "20 millis", autoCutover: false } })))
            )
          }).pipe(Effect.provide(app(url, [Fixtures.balance], { versions: { interval: null } })))
        )
        expect(result.events).toBeGreaterThanOrEqual(750)
        expect(result).toMatchObject({ v1: 0, v2: 0, v3: 0, v4: 0 })
        expect(result.versions.map((x) => [x.perspectiveName, x.state])).toEqual([
          ["balance", "live"],
          ["balance__v2", "building"],
          ["balance__v3", "building"],
          ["balance__v4", "building"]
        ])
        expect(result.versions.slice(1).every((x) => x.progress === 1 && x.historyStreams > 0)).toBe(true)
      })
    )
  )

  it.live("cutover, rollback and retirement: reads follow the live version; a retired version gets no more work", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const id = EventId.unsafeMake()
        const v2 = Fixtures.balanceVersion(2)
        const read = sql<{ data: { by?: number } }>("SELECT data FROM wh_per_balance")
        yield* Effect.scoped(Effect.andThen(deposit(id, 3), settle).pipe(Effect.provide(app(url, [Fixtures.balance]))))
        const seen = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* deposit(id, 4)
            yield* settle
            yield* PgPerspectiveVersions.awaitLive("balance__v2", { timeout: "30 seconds", interval: "10 millis" })
            const out: Array<unknown> = [(yield* read)[0]!.data.by ?? 1]
            const back = yield* PgPerspectiveVersions.rollback("balance")
            out.push(back.live, (yield* read)[0]!.data.by ?? 1)
            const again = yield* PgPerspectiveVersions.cutover("balance", 2, { grace: 0 })
            out.push(again.live, again.replaced, (yield* read)[0]!.data.by ?? 1)
            // The build loop (every 20 ms) may retire it before this call does: either way v1 is retired now.
            yield* PgPerspectiveVersions.retireDue
            out.push((yield* PgPerspectiveVersions.list).find((x) => x.perspectiveName === "balance")?.state)
            yield* deposit(id, 5)
            const [work] = yield* sql<{ n: number }>(
              "SELECT count(*)::int AS n FROM wh_perspective_events WHERE perspective_name = 'balance'"
            )
            out.push(work!.n)
            yield* settle
            out.push((yield* read)[0]!.data)
            return out
          }).pipe(Effect.provide(app(url, [Fixtures.balance, v2], { versions: { interval: "20 millis", cutover: { grace: "1 hour" } } })))
        )
        // Auto cutover served v2; rollback served v1; cutover served v2 again and retired v1 at once (grace 0).
        expect(seen).toEqual([2, "balance", 1, "balance__v2", "balance", 2, "retired", 0, { total: 12, by: 2 }])
      })
    )
  )

  it.live("with autoCutover off, a caught-up version is listed as caught up and the build loop says once what serves it", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const id = EventId.unsafeMake()
        yield* Effect.scoped(Effect.andThen(deposit(id, 3), settle).pipe(Effect.provide(app(url, [Fixtures.balance]))))
        const lines: Array<string> = []
        const capture = Logger.layer([
          Logger.make((options) => {
            if (options.logLevel === "Info") lines.push(String(options.message))
          })
        ])
        const said = (l: string) => l.includes("balance__v2 is caught up and waits for a cutover")
        const result = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* settle
            const v2 = yield* Effect.map(PgPerspectiveVersions.list, (vs) => vs.find((v) => v.perspectiveName === "balance__v2")!).pipe(
              Effect.repeat({ until: (v) => v.caughtUp && lines.some(said), schedule: Schedule.spaced("20 millis"), times: 500 })
            )
            yield* deposit(id, 4)
            yield* settle
            return { v2, still: (yield* PgPerspectiveVersions.list).find((v) => v.perspectiveName === "balance__v2") }
          }).pipe(
            Effect.provide(
              app(url, [Fixtures.balance, Fixtures.balanceVersion(2)], { versions: { interval: "20 millis", autoCutover: false } })
            ),
            Effect.provide(capture)
          )
        )
        expect(result.v2).toMatchObject({ state: "building", caughtUp: true, progress: 1 })
        expect(result.still).toMatchObject({ state: "building", caughtUp: true })
        expect(lines.filter(said)).toEqual([
          "perspective balance__v2 is caught up and waits for a cutover (versions.autoCutover is off): `whizbang cutover balance` serves it"
        ])
      })
    )
  )

  it.live("typed errors: unknown perspective or version, not caught up, nothing to roll back, bad options and names", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        yield* Effect.scoped(Effect.andThen(deposit(EventId.unsafeMake(), 1), settle).pipe(Effect.provide(app(url, [Fixtures.balance]))))
        const errors = yield* Effect.scoped(
          Effect.gen(function* () {
            const unknown = yield* Effect.flip(PgPerspectiveVersions.cutover("nope"))
            const noVersion = yield* Effect.flip(PgPerspectiveVersions.cutover("balance", 7))
            const nothing = yield* Effect.flip(PgPerspectiveVersions.rollback("balance"))
            // The build loop is off: v2's history is still planned.
            const notReady = yield* Effect.flip(PgPerspectiveVersions.cutover("balance", 2))
            const list = yield* PgPerspectiveVersions.list
            const awaitUnknown = yield* Effect.flip(PgPerspectiveVersions.awaitLive("balance__v9"))
            const awaitTimedOut = yield* Effect.flip(
              PgPerspectiveVersions.awaitLive("balance__v2", { timeout: "50 millis", interval: "10 millis" })
            )
            const badLag = yield* Effect.flip(PgPerspectiveVersions.cutover("balance", 2, { maxLag: -1 }))
            const badTimeout = yield* Effect.flip(PgPerspectiveVersions.awaitLive("balance__v2", { timeout: -5 }))
            const badLease = yield* Effect.flip(PgPerspectiveVersions.cutover("balance", 2, { lease: 0 }))
            return { unknown, noVersion, nothing, notReady, list, awaitUnknown, awaitTimedOut, badLag, badTimeout, badLease }
          }).pipe(Effect.provide(app(url, [Fixtures.balance, Fixtures.balanceVersion(2)], { versions: { interval: null } })))
        )
        expect(errors.unknown._tag).toBe("UnknownPerspectiveVersion")
        expect(errors.noVersion.message).toContain(
          'version 7 of perspective "balance" is not registered (registered: balance, balance__v2)'
        )
        expect(errors.nothing._tag).toBe("NothingToRollBack")
        expect(errors.notReady._tag).toBe("VersionNotReady")
        expect(errors.notReady.message).toContain("balance__v2 is not caught up: 1 stream(s) of history still to replay")
        expect(errors.list.find((v) => v.perspectiveName === "balance__v2")).toMatchObject({ state: "building", streamsToReplay: 1 })
        expect(errors.awaitUnknown).toMatchObject({ _tag: "UnknownPerspectiveVersion", known: ["balance", "balance__v2"] })
        expect(errors.awaitTimedOut).toMatchObject({ _tag: "VersionWaitTimedOut", perspectiveName: "balance__v2", state: "building" })
        expect(errors.awaitTimedOut.message).toContain("balance__v2 is not live after 50 ms: building, 0% of its history applied")
        expect(errors.badLag).toMatchObject({
          _tag: "PostgresConfigError",
          option: "maxLag",
          message: "maxLag must be a positive integer, got -1"
        })
        expect(errors.badTimeout).toMatchObject({ _tag: "PostgresConfigError", option: "timeout" })
        expect(errors.badLease).toMatchObject({ _tag: "PostgresConfigError", option: "lease" })
        const refused = (perspectives: ReadonlyArray<Perspective.Any>, config: Partial<Whizbang.Config> = {}) =>
          Effect.flip(Effect.scoped(Layer.build(app(url, perspectives, config))))
        const suffixed = { ...Fixtures.balance, name: "balance__v2", baseName: "balance__v2" }
        expect((yield* refused([suffixed]))._tag).toBe("InvalidPerspectiveName")
        expect((yield* refused([Fixtures.balanceVersion(0)]))._tag).toBe("InvalidPerspectiveVersion")
        expect((yield* refused([Fixtures.balance, Fixtures.balanceVersion(2), Fixtures.balanceVersion(2)]))._tag).toBe(
          "DuplicatePerspectiveName"
        )
        const badOption = yield* refused([Fixtures.balance], { versions: { chunkStreams: 0 } })
        expect(badOption.message).toContain("versions.chunkStreams must be a positive integer")
        expect(yield* refused([Fixtures.balance], { versions: { cutover: { lease: -1 } } })).toMatchObject({
          _tag: "PostgresConfigError",
          option: "versions.cutover.lease"
        })
      })
    )
  )

  it.live("rolling deploy: a version no live instance runs is shown as such, its work waits, and is built once one runs it", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const id = EventId.unsafeMake()
        const v2 = Fixtures.balanceVersion(2)
        const waiting = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* deposit(id, 2)
            // A write-side process of the new release registers v2; only old workers (v1) run.
            yield* Effect.scoped(
              Layer.build(
                Whizbang.layerWithoutWorker({
                  databaseUrl: url,
                  schema: "versions",
                  events,
                  perspectives: [Fixtures.balance, v2],
                  watchdog: { interval: null }
                })
              )
            )
            yield* deposit(id, 3)
            yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitIdle
            return (yield* PgPerspectiveVersions.list).find((v) => v.perspectiveName === "balance__v2")
          }).pipe(Effect.provide(app(url, [Fixtures.balance])))
        )
        expect(waiting).toMatchObject({ state: "building", hasRunner: false, streamsToReplay: 1, pendingEvents: 1 })
        const built = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* settle
            yield* PgPerspectiveVersions.awaitLive("balance__v2", { timeout: "30 seconds", interval: "10 millis" })
            return yield* sql<{ data: unknown }>("SELECT data FROM wh_per_balance")
          }).pipe(Effect.provide(app(url, [Fixtures.balance, v2])))
        )
        expect(built).toEqual([{ data: { total: 5, by: 2 } }])
      })
    )
  )
})

describe("a perspective changed without a new version", () => {
  it.live("registration warns that its rows keep the old logic, once per change", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
        const warnings: Array<string> = []
        const capture = Logger.layer([
          Logger.make((options) => {
            if (options.logLevel === "Warn") warnings.push(String(options.message))
          })
        ])
        const doubled = Perspective.make({
          name: "balance",
          events: [Fixtures.Deposited],
          model: Schema.Struct({ total: Schema.Number }),
          initial: { total: 0 },
          apply: { Deposited: (m, e) => ({ total: m.total + 2 * e.payload.amount }) }
        })
        const start = (perspective: Perspective.Any) =>
          Effect.scoped(Layer.build(app(url, [perspective], { versions: { interval: null } })).pipe(Effect.provide(capture)))
        yield* start(Fixtures.balance)
        yield* start(Fixtures.balance)
        const before = warnings.length
        yield* start(doubled)
        const changed = warnings.slice(before)
        yield* start(doubled)
        expect(before).toBe(0)
        expect(changed.filter((w) => w.includes("differ from those version 1 was registered with"))).toHaveLength(1)
        expect(changed.join("\n")).toContain("declare version 2 to rebuild them")
        expect(warnings.length).toBe(before + changed.length)
      })
    )
  )
})

describe("a version that cannot apply its history", () => {
  it.live("dead-letters what it cannot apply and does not go live; status names it", () =>
    withDatabase((url) =>
      Effect.gen(function* () {
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
        const id = EventId.unsafeMake()
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* deposit(id, 13)
            yield* deposit(id, 2)
            yield* settle
          }).pipe(Effect.provide(app(url, [Fixtures.balance])))
        )
        const warnings: Array<string> = []
        const capture = Logger.layer([
          Logger.make((options) => {
            if (options.logLevel === "Warn") warnings.push(String(options.message))
          })
        ])
        const heldBack = (l: string) => l.includes("balance__v2 has replayed its history but dead-lettered 1 event(s)")
        const result = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* settle
            // The build loop says it once, not at every round (rounds every 20 ms while the checks below run).
            yield* Effect.sync(() => warnings.some(heldBack)).pipe(
              Effect.repeat({ until: (seen) => seen, schedule: Schedule.spaced("20 millis"), times: 500 })
            )
            const versions = yield* PgPerspectiveVersions.list
            const refused = yield* Effect.flip(PgPerspectiveVersions.cutover("balance", 2))
            const awaited = yield* Effect.flip(PgPerspectiveVersions.awaitLive("balance__v2"))
            const findings = yield* PgWatchdog.diagnoseVersions()
            const health = yield* PgHealth.check({ heartbeatMaxAge: null })
            return {
              versions,
              refused,
              awaited,
              findings,
              health,
              served: yield* sql<{ data: unknown }>("SELECT data FROM wh_per_balance")
            }
          }).pipe(
            Effect.provide(
              app(url, [Fixtures.balance, picky], {
                options: { ...Fixtures.fast, maxPerspectiveEventAttempts: 1 },
                versions: { interval: "20 millis" }
              })
            ),
            Effect.provide(capture)
          )
        )
        expect(warnings.filter(heldBack)).toHaveLength(1)
        expect(result.versions.find((v) => v.perspectiveName === "balance__v2")).toMatchObject({ state: "building", deadLetters: 1 })
        expect(result.refused.message).toContain("balance__v2 dead-lettered 1 event(s)")
        // awaitLive does not wait out its 10-minute default: this version cannot go live on its own.
        expect(result.awaited).toMatchObject({ _tag: "VersionNotReady", perspectiveName: "balance__v2", deadLetters: 1 })
        // The watchdog names why it waits, and the service is degraded by it (an operator must act).
        expect(result.findings).toMatchObject([{ perspective: "balance__v2", reason: { _tag: "VersionHasDeadLetters", deadLetters: 1 } }])
        expect(result.findings[0]?.message).toContain("does not go live until they are retried or discarded")
        expect(result.health.status).toBe("degraded")
        expect(result.served).toEqual([{ data: { total: 15 } }])
      })
    )
  )
})
