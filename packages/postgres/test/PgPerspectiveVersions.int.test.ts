// Perspective versions at the registry level: which version a cutover without a version picks, and which
// instances count as running a version. Versions are registered directly (no worker): the cases need no events.
import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { PgClient, PgHealth, PgPerspectiveVersions, PgStatus, PgWatchdog, TenantStart } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Layer, Logger, Option, Schedule } from "effect"
import { TestClock } from "effect/testing"

const sql = (text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<Record<string, unknown>>(text, params))

const declared = (baseName: string, version: number): PgPerspectiveVersions.Declared => ({
  name: version === 1 ? baseName : `${baseName}__v${version}`,
  baseName,
  version,
  eventTypes: ["Deposited"]
})

const states = (baseName: string) =>
  Effect.map(PgPerspectiveVersions.list, (versions) =>
    Object.fromEntries(versions.filter((v) => v.baseName === baseName).map((v) => [v.perspectiveName, v.state]))
  )

const instance = (perspectives: ReadonlyArray<string> | null, heartbeatAgo: number) =>
  sql(
    `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at, perspective_names)
     values ($1, 'bank', 'host', 1, now() - make_interval(secs => $2), $3)`,
    [randomUUID(), heartbeatAgo, perspectives]
  )

const pendingWork = (perspective: string, ageSeconds: number) =>
  Effect.gen(function* () {
    const streamId = randomUUID()
    const eventId = randomUUID()
    yield* sql(
      `insert into wh_events (event_id, stream_id, stream_version, event_type, payload, created_at) values ($1, $2, 1, 'Deposited', '{}', now() - make_interval(secs => $3))`,
      [eventId, streamId, ageSeconds]
    )
    yield* sql(
      `insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, created_at)
       values (gen_random_uuid(), $1, $2, $3, 0, now() - make_interval(secs => $4))`,
      [streamId, perspective, eventId, ageSeconds]
    )
    return streamId
  })

const watchdog = { stuckAfter: Duration.seconds(30), deadInstanceAfter: Duration.seconds(30) }

/** A version of its own event type: no other case's events are its history. */
const own = (baseName: string, version: number): PgPerspectiveVersions.Declared => ({
  ...declared(baseName, version),
  eventTypes: [`${baseName}Happened`]
})

const version = (key: string) => Effect.map(PgPerspectiveVersions.list, (versions) => versions.find((v) => v.perspectiveName === key)!)

/** The info lines logged while `effect` runs. */
const infoLines = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const capture = Logger.layer([
      Logger.make((options) => {
        if (options.logLevel === "Info") lines.push(String(options.message))
      })
    ])
    const a = yield* Effect.provide(effect, capture)
    return { a, lines }
  })

layer(PgTestDatabase.layer({ schema: "versions_ops", maxConnections: 4 }))((it) => {
  // A tenant's services started by the fleet when its check found no version work (`TenantStart`): the build loop's
  // first round waits its interval; told nothing (a single-tenant service), it runs at start. A retirement that is due
  // shows whether a round ran. The polls are real round trips, no sleeps; the interval passes on the TestClock.
  it.effect("the build loop's first round runs at start, or after its interval when the start was told there is no version work", () =>
    Effect.gen(function* () {
      const due = (key: string) =>
        sql(
          `insert into wh_perspective_versions (perspective_name, base_name, version, state, event_types, retire_after)
           values ($1, $1, 1, 'retiring', '{}', now() - interval '1 second')`,
          [key]
        )
      const state = (key: string) =>
        Effect.map(sql("select state from wh_perspective_versions where perspective_name = $1", [key]), (rows) => rows[0]?.state)
      const until = (key: string, wanted: string, times: number) => Effect.repeat(state(key), { until: (s) => s === wanted, times })
      const loop = (facts: TenantStart.Facts | undefined) =>
        Layer.build(PgPerspectiveVersions.layerBuilder([declared("quiet_base", 1)], { interval: Duration.hours(1) }, 16)).pipe(
          Effect.provideService(TenantStart.TenantStart, facts)
        )

      yield* due("told_nothing")
      yield* Effect.scoped(Effect.andThen(loop(undefined), until("told_nothing", "retired", 2_000)))
      expect(yield* state("told_nothing")).toBe("retired")

      yield* due("told_quiet")
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* loop({ versionWork: false, otherInstances: true })
          // As many round trips as the start-time round above needed at most: it would have retired the version.
          expect(yield* until("told_quiet", "retired", 200)).toBe("retiring")
          yield* TestClock.adjust(Duration.hours(2))
          expect(yield* until("told_quiet", "retired", 2_000)).toBe("retired")
        })
      )
    })
  )

  it.effect("cutover without a version goes to a newer version only: never back to the retiring one", () =>
    Effect.gen(function* () {
      yield* PgPerspectiveVersions.register([declared("ledger", 1)])
      yield* PgPerspectiveVersions.register([declared("ledger", 1), declared("ledger", 2)])
      expect(yield* states("ledger")).toEqual({ ledger: "live", ledger__v2: "building" })

      const first = yield* PgPerspectiveVersions.cutover("ledger", undefined, { grace: "1 hour" })
      expect(first).toMatchObject({ live: "ledger__v2", replaced: "ledger", switched: true })
      expect(yield* states("ledger")).toEqual({ ledger: "retiring", ledger__v2: "live" })

      // The only non-live, non-retired version is the older, retiring v1: nothing to do, reads stay on v2.
      const again = yield* PgPerspectiveVersions.cutover("ledger", undefined, { grace: "1 hour" })
      expect(again).toEqual({ baseName: "ledger", live: "ledger__v2", replaced: undefined, millis: 0, switched: false })
      expect(yield* states("ledger")).toEqual({ ledger: "retiring", ledger__v2: "live" })
      const view = yield* sql("select pg_get_viewdef('wh_per_ledger'::regclass) as def")
      expect(String(view[0]!.def)).toMatch(/wh_per_ledger__v2/)

      // A version registered later is newer: it is the target.
      yield* PgPerspectiveVersions.register([declared("ledger", 3)])
      const third = yield* PgPerspectiveVersions.cutover("ledger", undefined, { grace: "1 hour" })
      expect(third).toMatchObject({ live: "ledger__v3", replaced: "ledger__v2", switched: true })
    })
  )

  it.effect("hasRunner counts only instances with a fresh heartbeat (the watchdog's dead-instance threshold)", () =>
    Effect.gen(function* () {
      yield* sql("delete from wh_service_instances")
      yield* PgPerspectiveVersions.register([declared("audit", 1), declared("audit", 2)])
      // A crashed instance's row, not abandoned yet, that ran both versions; a live one that runs only v1.
      yield* instance(["audit", "audit__v2"], 120)
      yield* instance(["audit"], 2)
      const runners = (versions: ReadonlyArray<PgPerspectiveVersions.VersionInfo>) =>
        Object.fromEntries(versions.filter((v) => v.baseName === "audit").map((v) => [v.perspectiveName, v.hasRunner]))

      expect(runners(yield* PgPerspectiveVersions.list)).toEqual({ audit: true, audit__v2: false })
      // With a longer threshold the stale row counts again.
      expect(runners(yield* PgPerspectiveVersions.listWith({ deadInstanceAfter: "5 minutes" }))).toEqual({
        audit: true,
        audit__v2: true
      })
      // An instance with no recorded perspective set runs every version.
      yield* instance(null, 1)
      expect(runners(yield* PgPerspectiveVersions.list)).toEqual({ audit: true, audit__v2: true })
    })
  )

  it.effect("the watchdog names a version no live instance runs (rolling deploy), then a building version; health ignores building", () =>
    Effect.gen(function* () {
      yield* sql("delete from wh_service_instances")
      yield* PgPerspectiveVersions.register([declared("rates", 1), declared("rates", 2)])
      // Only instances of the release before run: they know v1, not v2.
      yield* instance(["rates"], 1)
      const stream = yield* pendingWork("rates__v2", 120)
      const v2 = (findings: ReadonlyArray<PgWatchdog.VersionFinding>) => findings.filter((f) => f.baseName === "rates")

      const pair = (yield* PgWatchdog.diagnose(watchdog)).find((s) => s.streamId === stream)
      expect(pair?.reason).toEqual({
        _tag: "NoInstanceRunsVersion",
        perspective: "rates__v2",
        baseName: "rates",
        version: 2,
        state: "building",
        liveInstances: 1
      })
      expect(pair?.message).toMatch(/no live instance runs version 2 of perspective "rates"/)
      expect((yield* PgWatchdog.blocked(watchdog)).map((s) => s.streamId)).toContain(stream)
      expect(v2(yield* PgWatchdog.diagnoseVersions(watchdog))).toMatchObject([
        { perspective: "rates__v2", state: "building", reason: { _tag: "NoInstanceRunsVersion" } }
      ])

      // The new release's instance starts: the version builds.
      yield* instance(["rates", "rates__v2"], 1)
      const building = (yield* PgWatchdog.diagnose(watchdog)).find((s) => s.streamId === stream)!
      expect(building.reason).toMatchObject({ _tag: "VersionBuilding", perspective: "rates__v2", version: 2 })
      expect(PgWatchdog.isBlocked(building.reason)).toBe(false)
      expect(PgHealth.judge({ perspectives: [], instances: [], stuck: [building] }, { heartbeatMaxAge: null })).toEqual([])
      const snapshot = yield* PgStatus.snapshot({ watchdog })
      expect(snapshot.versions.find((v) => v.perspectiveName === "rates__v2")).toMatchObject({
        state: "building",
        pendingEvents: 1,
        hasRunner: true
      })
      expect(v2(snapshot.versionFindings)).toMatchObject([{ perspective: "rates__v2", reason: { _tag: "VersionBuilding" } }])
      expect(snapshot.versionFindings.find((f) => f.perspective === "rates__v2")?.message).toMatch(/is building: \d+% of its history/)
    })
  )

  it.effect("the build loop counts a live version's backlog up to 1,000 (list counts it all) and a building version's in full", () =>
    Effect.gen(function* () {
      // Its own event type: no history of the other cases is planned for these versions.
      const tally = [1, 2].map((version) => ({ ...declared("tally", version), eventTypes: ["Tallied"] }))
      yield* PgPerspectiveVersions.register(tally)
      // 1,200 pending work rows for each version, in two statements (one event per stream).
      for (const perspective of ["tally", "tally__v2"]) {
        yield* sql(
          `with e as (
             insert into wh_events (event_id, stream_id, stream_version, event_type, payload)
             select gen_random_uuid(), gen_random_uuid(), 1, 'Tallied', '{}' from generate_series(1, 1200)
             returning event_id, stream_id)
           insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
           select gen_random_uuid(), e.stream_id, $1, e.event_id, 0 from e`,
          [perspective]
        )
      }
      const round = yield* PgPerspectiveVersions.buildStep(tally, {
        partitionCount: 1,
        autoCutover: false
      })
      const pending = (versions: ReadonlyArray<PgPerspectiveVersions.VersionInfo>) =>
        Object.fromEntries(versions.filter((v) => v.baseName === "tally").map((v) => [v.perspectiveName, v.pendingEvents]))
      expect(pending(round.versions)).toEqual({ tally: 1000, tally__v2: 1200 })
      expect(pending(yield* PgPerspectiveVersions.list)).toEqual({ tally: 1200, tally__v2: 1200 })
      const live = round.versions.find((v) => v.perspectiveName === "tally")!
      expect(live.lagSeconds).toBe(0)
    })
  )

  it.effect("rollback only goes back: a second rollback is refused and names the way forward, which cutover takes", () =>
    Effect.gen(function* () {
      yield* PgPerspectiveVersions.register([own("gauge", 1), own("gauge", 2)])
      yield* PgPerspectiveVersions.cutover("gauge", 2, { grace: "1 hour" })
      const back = yield* PgPerspectiveVersions.rollback("gauge", { grace: "1 hour" })
      expect(back).toMatchObject({ live: "gauge", replaced: "gauge__v2", switched: true })
      expect(yield* states("gauge")).toEqual({ gauge: "live", gauge__v2: "retiring" })

      // Not a toggle: nothing older than the live v1 is retiring; reads stay on v1.
      const twice = yield* Effect.flip(PgPerspectiveVersions.rollback("gauge"))
      expect(twice).toMatchObject({ _tag: "NothingToRollBack", baseName: "gauge", live: "gauge", newer: ["gauge__v2"] })
      expect(twice.message).toBe(
        'perspective "gauge" has nothing to roll back to: no version older than the live gauge is retiring; gauge__v2 is newer: `whizbang cutover gauge` goes forward'
      )
      expect(yield* states("gauge")).toEqual({ gauge: "live", gauge__v2: "retiring" })

      // Forward is a cutover, with or without the version.
      const forward = yield* PgPerspectiveVersions.cutover("gauge", undefined, { grace: "1 hour" })
      expect(forward).toMatchObject({ live: "gauge__v2", replaced: "gauge", switched: true })
      expect(yield* states("gauge")).toEqual({ gauge: "retiring", gauge__v2: "live" })
    })
  )

  it.effect("an unregistered perspective's refusal names every registered one (its base has none)", () =>
    Effect.gen(function* () {
      yield* PgPerspectiveVersions.register([own("order_summary", 1), own("customer_stats", 1)])
      const registered = (yield* PgPerspectiveVersions.list).map((v) => v.perspectiveName)
      expect(registered).toEqual(expect.arrayContaining(["customer_stats", "order_summary"]))
      const cutover = yield* Effect.flip(PgPerspectiveVersions.cutover("order_total"))
      const rollback = yield* Effect.flip(PgPerspectiveVersions.rollback("order_total"))
      const awaited = yield* Effect.flip(PgPerspectiveVersions.awaitLive("order_total"))
      for (const e of [cutover, rollback, awaited]) {
        expect(e).toMatchObject({ _tag: "UnknownPerspectiveVersion", baseName: "order_total", known: registered })
        expect(e.message).toBe(`perspective "order_total" is not registered (registered: ${registered.join(", ")})`)
      }
      // A version of a known base names the versions of that base.
      const v9 = yield* Effect.flip(PgPerspectiveVersions.awaitLive("order_summary__v9"))
      expect(v9.message).toBe('version 9 of perspective "order_summary" is not registered (registered: order_summary)')
    })
  )

  it.effect("a building version with its history replayed and little lag is listed as caught up", () =>
    Effect.gen(function* () {
      const score = [own("score", 1), own("score", 2)]
      yield* PgPerspectiveVersions.register(score)
      const caughtUp = (versions: ReadonlyArray<PgPerspectiveVersions.VersionInfo>) =>
        Object.fromEntries(versions.filter((v) => v.baseName === "score").map((v) => [v.perspectiveName, [v.state, v.caughtUp]]))
      // No history and nothing pending: it waits for a cutover.
      expect(caughtUp(yield* PgPerspectiveVersions.list)).toEqual({ score: ["live", false], score__v2: ["building", true] })
      // History still to replay: building.
      yield* sql("insert into wh_perspective_backfill (perspective_name, stream_id, through_event_id) values ('score__v2', $1, $1)", [
        randomUUID()
      ])
      expect(caughtUp(yield* PgPerspectiveVersions.list)).toEqual({ score: ["live", false], score__v2: ["building", false] })
    })
  )

  it.effect("an abandoned hand-over (its lease ran out, or none) is resumed by one of two build rounds at once; a held one is not", () =>
    Effect.gen(function* () {
      const shift = [own("shift", 1), own("shift", 2)]
      const legacy = [own("legacy", 1), own("legacy", 2)]
      yield* PgPerspectiveVersions.register([...shift, ...legacy])
      // shift__v2's hand-over is held by a live owner; legacy__v2 is ready with no owner (left by a release before owners).
      yield* sql(`update wh_perspective_versions set state = 'ready', handover_owner = gen_random_uuid(),
                    handover_until = now() + interval '1 hour', handover_from = 'building' where perspective_name = 'shift__v2'`)
      yield* sql(`update wh_perspective_versions set state = 'ready' where perspective_name = 'legacy__v2'`)
      const round = PgPerspectiveVersions.buildStep([...shift, ...legacy], { partitionCount: 1, autoCutover: false })
      const first = yield* infoLines(round)
      expect(yield* states("shift")).toEqual({ shift: "live", shift__v2: "ready" })
      expect(yield* states("legacy")).toEqual({ legacy: "retiring", legacy__v2: "live" })
      expect(first.lines.filter((l) => l.includes("resuming the hand-over to legacy__v2"))).toHaveLength(1)
      expect(yield* version("shift__v2")).toMatchObject({ state: "ready", handOverAbandoned: false })

      // The owner is gone: its lease ran out. Two instances' rounds at once: one resumes it, the switch happens once.
      yield* sql(`update wh_perspective_versions set handover_until = now() - interval '1 second' where perspective_name = 'shift__v2'`)
      expect(yield* version("shift__v2")).toMatchObject({ state: "ready", handOverAbandoned: true })
      const both = yield* infoLines(Effect.all([round, round], { concurrency: 2 }))
      expect(yield* states("shift")).toEqual({ shift: "retiring", shift__v2: "live" })
      expect(both.lines.filter((l) => l.includes("resuming the hand-over to shift__v2"))).toHaveLength(1)
      expect(both.lines.filter((l) => l.includes("reads now served by shift__v2"))).toHaveLength(1)
    })
  )
})

// Real time: the lease is renewed by a fiber that sleeps.
describe("the hand-over's lease", () => {
  it.live("the owner renews its lease while the hand-over waits, and lets it go when interrupted", () =>
    Effect.gen(function* () {
      yield* PgPerspectiveVersions.register([own("tempo", 1), own("tempo", 2)])
      const reached: Array<string> = []
      const hooks = Layer.succeed(PgPerspectiveVersions.HandOverHooks, {
        onStep: (step, key) =>
          step === "ready"
            ? Effect.andThen(
                Effect.sync(() => reached.push(key)),
                Effect.never
              )
            : Effect.void
      })
      const handOver = yield* Effect.forkChild(
        PgPerspectiveVersions.cutover("tempo", 2, { lease: "300 millis" }).pipe(Effect.provide(hooks))
      )
      const held = yield* version("tempo__v2").pipe(
        Effect.repeat({ until: (v) => v.state === "ready" && reached.length > 0, schedule: Schedule.spaced("10 millis"), times: 1_000 })
      )
      expect(held.handOverAbandoned).toBe(false)
      // Renewed (every 100 ms) past the first lease: still held.
      const renewed = yield* version("tempo__v2").pipe(
        Effect.repeat({
          until: (v) => v.handOverUntil!.getTime() >= held.handOverUntil!.getTime() + 300,
          schedule: Schedule.spaced("20 millis"),
          times: 500
        })
      )
      expect(renewed).toMatchObject({ state: "ready", handOverAbandoned: false })
      yield* Fiber.interrupt(handOver)
      // Let go at once: abandoned now, not after the lease.
      expect(yield* version("tempo__v2")).toMatchObject({ state: "ready", handOverAbandoned: true })
    }).pipe(Effect.provide(PgTestDatabase.layer({ schema: "versions_lease", maxConnections: 4 })))
  )
})

// Real time: a registration that waits for the DDL lock is observed not to finish.
describe("start-up layout", () => {
  it.live("a start with the layout in place takes no DDL lock; a drifted layout (the view on another table) is repaired under it", () =>
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const layout = [own("plan", 1), own("plan", 2)]
      yield* PgPerspectiveVersions.register(layout)
      // Another transaction holds the DDL lock of the schema (as a registration in another process would).
      const release = yield* Deferred.make<void>()
      const locked = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(
        client.withTransaction(
          Effect.andThen(
            sql("SELECT pg_advisory_xact_lock(hashtextextended('@whizbang/postgres/PgPerspectiveStore:' || current_schema(), 0))"),
            Effect.andThen(Deferred.succeed(locked, undefined), Deferred.await(release))
          )
        )
      )
      yield* Deferred.await(locked)
      // In place: registering again reads the layout and is done, the lock notwithstanding.
      expect(yield* PgPerspectiveVersions.register(layout).pipe(Effect.timeout("5 seconds"))).toEqual([])
      // Drift: the served view now reads version 2's table while version 1 is live.
      yield* sql(`CREATE OR REPLACE VIEW wh_per_plan AS SELECT * FROM wh_per_plan__v2`)
      const repair = yield* Effect.forkChild(PgPerspectiveVersions.register(layout))
      // It waits for the lock (the DDL path), then puts the view back on the live version's table.
      expect(yield* Effect.timeoutOption(Fiber.join(repair), "300 millis")).toEqual(Option.none())
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.join(repair)
      const reads = yield* sql(
        `SELECT DISTINCT t.relname::text AS table FROM pg_class w JOIN pg_rewrite r ON r.ev_class = w.oid
         JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
         JOIN pg_class t ON t.oid = d.refobjid AND t.oid <> w.oid
         WHERE w.relname = 'wh_per_plan' AND w.relnamespace = current_schema()::regnamespace`
      )
      expect(reads.map((r) => r["table"])).toEqual(["wh_per_plan__v1"])
      // A table dropped by hand is created again.
      yield* sql("DROP TABLE wh_per_plan__v2")
      yield* PgPerspectiveVersions.register(layout)
      expect(yield* sql("SELECT to_regclass('wh_per_plan__v2')::text AS t")).toEqual([{ t: "wh_per_plan__v2" }])
    }).pipe(Effect.provide(PgTestDatabase.layer({ schema: "versions_layout", maxConnections: 4 })))
  )
})
