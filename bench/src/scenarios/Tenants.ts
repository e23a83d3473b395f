/**
 * Scenario t (issue 39, point 7): many tenants on one PostgreSQL, served through `Whizbang.layerTenants`, every
 * figure next to a single-tenant one measured in the same run.
 *
 * 0. Floor (`TenantsFloor.ts`): hand-written set-based SQL over the same events in one schema and over `tenants`
 *    schemas: what a schema per tenant costs with the least work per tenant.
 * 1. Single tenant (reference): scenario a's data set (`throughput.events` over `.streams`) in a fresh database,
 *    drained by `workers` scenario-a worker processes (`workerChild.ts`, default options); then, the same processes
 *    idle, the database's transactions and statements over `idleSeconds` (the baseline of an idle single-tenant service).
 * 2. Provisioning: `tenants` tenants added as a service adds them (`Tenants.add`: schema created and migrated, the
 *    perspectives registered and laid out), 4 at a time, plus the replay tenant; tenants/s.
 * 3. Throughput: the same events spread evenly over the tenants (tenant k: events `[0, events / tenants)` over
 *    `streams / tenants` streams, loaded set-based as in scenario a, with their work rows), drained by `workers`
 *    tenant worker processes (`tenantWorkerChild.ts`, `Whizbang.layerTenants`) started together; events/s from the
 *    first claim of any tenant to the last commit, and from `go` (fleet start) to the last commit.
 * 4. Idle: once every process reports no tenant held, transactions and statements over `idleSeconds`.
 * 5. Lag: `quietTenants` tenants each append `quietRate` events/s through `Tenants.run` (a `Whizbang.layerTenants`
 *    in this process, serving no tenant's work itself); lag = append completion -> both read models committed (the
 *    hooks of whichever process applied it); `lagSeconds` without a replay; then while the replay tenant works
 *    through a backlog: its `replayEvents` (loaded in step 2, no work) get a work row per event and perspective in
 *    one transaction (a rebuild of some event types, `rebuild -t`, leaves that: every event to apply again); then
 *    while it replays them: `whizbang rebuild` of both its perspectives (`Rewind.rebuild` of `@whizbang/cli`, every
 *    type: the history planned for the replay path, no work rows), until the plan is empty.
 * Connections: `pg_stat_activity` sampled every 50 ms throughout, peak per process (`application_name`) and part.
 */
import { Rewind } from "@whizbang/cli"
import { type Duration, Effect, Layer, References } from "effect"
import type pg from "pg"
import { EventStore, PgClient, Tenants, Whizbang as Wb } from "whizbang"
import * as ActivitySampler from "../ActivitySampler.js"
import * as Domain from "../Domain.js"
import type { Profile } from "../Profile.js"
import * as PG from "../Postgres.js"
import * as StatementCosts from "../StatementCosts.js"
import * as Stats from "../Stats.js"
import { inParallel } from "../inParallel.js"
import * as Whizbang from "../systems/Whizbang.js"
import type { Table } from "../Table.js"
import * as TenantWorkerProcess from "../TenantWorkerProcess.js"
import * as TenantsFloor from "./TenantsFloor.js"
import * as WorkerProcess from "../WorkerProcess.js"

/**
 * The connection budget of a tenant worker process: `maxConnections` 4 (requests, the fleet's checks, each tenant's
 * start-up statements) + a worker pool of `maxConcurrentDrainConsumers` 3 + 2 = 5 (one for all tenants) + the LISTEN
 * connection = 10.
 */
export const budget = { maxConnections: 4, options: { maxConcurrentDrainConsumers: 3 } } as const
/** A tenant's services stop this long after its last work (default 30 s: shortened so the idle part starts sooner). */
const idleTimeToLive = "5 seconds"
const idleCheck = "2 seconds"
const replayTenant = "replay"

export interface Lag {
  readonly window: "without replay" | "during backlog" | "during replay"
  readonly seconds: number
  readonly appends: number
  readonly latency: Stats.Latency
  /**
   * The worker processes' event loops in the window: of the longest delay in each 200 ms status, the p99 and the
   * maximum (ms). A loop held up delays every tenant of its process.
   */
  readonly loopDelay: { readonly p99: number; readonly max: number }
}

export interface Result {
  readonly tenants: number
  readonly workers: number
  readonly events: number
  readonly eventsPerTenant: number
  readonly streamsPerTenant: number
  readonly single: {
    readonly eventsPerSecond: number
    readonly seconds: number
    readonly idle: Idle
    readonly peakConnections: number
  }
  /** Hand-written SQL over the same events in one schema and over as many schemas as tenants (`TenantsFloor.ts`). */
  readonly floor: TenantsFloor.Floor
  readonly provisioning: { readonly tenants: number; readonly seconds: number; readonly perSecond: number }
  readonly throughput: {
    readonly eventsPerSecond: number
    readonly seconds: number
    /** From `go` (every process's fleet starting) to the last commit. */
    readonly fromStartEventsPerSecond: number
    readonly fromStartSeconds: number
    /**
     * The worker processes' own round trips per tenant from the fleets' start until every tenant was let go (each
     * tenant's checks, services started and stopped, claims and completions).
     */
    readonly roundTripsPerTenant: number
  }
  readonly idle: Idle
  /** Peak sessions per tenant worker process over every part. */
  readonly peakConnections: Record<string, number>
  readonly peaksByPart: Record<string, Record<string, number>>
  readonly lag: ReadonlyArray<Lag>
  /** The replay tenant's history replayed by `whizbang rebuild` (the replay path): from the command to an empty plan. */
  readonly replay: { readonly events: number; readonly seconds: number; readonly eventsPerSecond: number }
  /** The same events as a backlog of work rows (one per event and perspective): from their commit to the last applied. */
  readonly backlog: { readonly events: number; readonly seconds: number; readonly eventsPerSecond: number }
  /** (event, perspective) pairs of the lag part applied by the appender process itself. */
  readonly appenderApplied: number
  readonly peakRssMb: number
  readonly problems: ReadonlyArray<string>
}

export interface Idle {
  readonly seconds: number
  readonly transactions: number
  readonly transactionsPerSecond: number
  /** Distinct statements seen in `pg_stat_activity` per application name (a lower bound). */
  readonly statements: Record<string, number>
  /**
   * The tenant worker processes' own round trips to PostgreSQL over the window (their count, reported with each
   * 200 ms status; every client of theirs): what idle tenants cost them, autovacuum and other sessions left out.
   */
  readonly workerRoundTrips?: number | undefined
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const now = () => performance.timeOrigin + performance.now()
const tenantId = (k: number) => `t${String(k).padStart(5, "0")}`
const databaseOf = (url: string) => new URL(url).pathname.slice(1)

const idleWindow = async (sampler: ActivitySampler.Sampler, seconds: number, roundTrips?: () => number): Promise<Idle> => {
  // A backend that ran a transaction less than a second after its last flush of the counters flushes them once idle
  // for 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL): let the last busy moments land before the window opens.
  await sleep(11_000)
  sampler.countStatements()
  const before = await sampler.transactions()
  const tripsBefore = roundTrips?.()
  await sleep(seconds * 1000)
  const after = await sampler.transactions()
  const tripsAfter = roundTrips?.()
  const statements = sampler.statements()
  return {
    seconds,
    transactions: after - before,
    transactionsPerSecond: (after - before) / seconds,
    statements,
    workerRoundTrips: tripsBefore === undefined || tripsAfter === undefined ? undefined : tripsAfter - tripsBefore
  }
}

/** Part 1: scenario a's data, `workers` worker processes, then the same processes idle. */
const single = (serverUrl: string, profile: Profile, log: (s: string) => void): Promise<Result["single"] & { problems: Array<string> }> =>
  PG.withFreshDatabase(serverUrl, "tn1", async (url) => {
    const { events, streams } = profile.throughput
    const db = PG.pool(url)
    const sampler = await ActivitySampler.start(serverUrl, databaseOf(url))
    const workers: Array<WorkerProcess.Worker> = []
    try {
      await Whizbang.migrate(url)
      await Whizbang.load(db, 0, events, streams)
      for (let k = 0; k < profile.tenants.workers; k++) workers.push(await WorkerProcess.start(url, {}, 0, true))
      const costs = await StatementCosts.start(url, log)
      sampler.part("single")
      for (const w of workers) WorkerProcess.go(w)
      await WorkerProcess.until(workers, () => workers.reduce((n, w) => n + w.progress.applied, 0) >= events * 2, 30_000, "single tenant")
      const settled = await Promise.all(workers.map(WorkerProcess.settle))
      // Per as many events as a tenant of part 2 has: the two tables compare.
      for (const line of (await costs?.finish(profile.tenants.tenants)) ?? []) log(`  single tenant, ${line}`)
      if (settled.some((s) => s === undefined)) throw new Error("a worker process did not report its end")
      const firstClaim = Math.min(...settled.filter((s) => s!.started > 0).map((s) => s!.started))
      const lastCommit = Math.max(...settled.map((s) => s!.lastCommit))
      const seconds = (lastCommit - firstClaim) / 1000
      const problems = Domain.verify(Domain.expected(events, streams), await Whizbang.readModels(db))
      log(`single tenant, ${workers.length} worker processes: ${Stats.fmt(events / seconds)} events/s`)
      sampler.part("single idle")
      const idle = await idleWindow(sampler, profile.tenants.idleSeconds)
      log(`single tenant idle: ${idle.transactions} transactions in ${idle.seconds} s`)
      // Every scenario-a worker process names itself "bench-worker-process": the peak is theirs together.
      const peak = Math.max(0, ...Object.values(sampler.peaks()).map((p) => p["bench-worker-process"] ?? 0))
      return { eventsPerSecond: events / seconds, seconds, idle, peakConnections: peak / workers.length, problems }
    } finally {
      await Promise.all(workers.map(WorkerProcess.stop))
      await sampler.stop()
      await db.end()
    }
  })

/**
 * Tenants added as a service adds them (`Tenants.add`, 4 at a time, by a process that only writes): each schema
 * created and migrated, and the service's perspectives registered and laid out in it.
 */
const provision = (url: string, ids: ReadonlyArray<string>) =>
  Effect.runPromise(
    Effect.forEach(ids, (id) => Tenants.add(id), { concurrency: 4, discard: true }).pipe(
      Effect.provide(
        Wb.layerTenants({
          databaseUrl: url,
          schema: Whizbang.schema,
          serviceName: "bench-tenants",
          applicationName: "bench-tenants-provision",
          maxConnections: 4,
          events: Domain.registry,
          perspectives: Domain.perspectives,
          options: budget.options,
          watchdog: { interval: null },
          tenants: { serve: [] }
        })
      ),
      Effect.provideService(References.MinimumLogLevel, "Warn")
    )
  )

/** The appender of part 5: `Whizbang.layerTenants` in this process, applying no tenant's work itself (`serve: []`). */
const appenderLayer = (url: string, onCommit: (perspective: string, ids: ReadonlyArray<string>, at: number) => void) =>
  Wb.layerTenants({
    databaseUrl: url,
    schema: Whizbang.schema,
    serviceName: "bench-tenants",
    applicationName: "bench-tenants-appender",
    // Not a worker process: the budget is theirs. Its appends (and, while requests hold them, the quiet tenants'
    // workers: see `serve` in the README) share these.
    maxConnections: 10,
    events: Domain.registry,
    perspectives: Domain.perspectives,
    options: budget.options,
    watchdog: { interval: null },
    hooks: { onPerspectiveEventProcessed: (group) => Effect.sync(() => onCommit(group.perspectiveName, group.eventIds, now())) },
    tenants: { idleTimeToLive: idleTimeToLive as Duration.Input, idleCheck: idleCheck as Duration.Input, serve: [] }
  })

const appendOne = (tenant: string, i: number, streams: number) => {
  const stream = Domain.streamId(i % streams)
  return Tenants.run(
    tenant,
    Effect.flatMap(Effect.service(EventStore.EventStore), (store) =>
      Effect.map(
        store.append(stream, [Domain.Deposited.make({ accountId: stream, amount: Domain.amountOf(i), seq: Math.floor(i / streams) + 1 })]),
        (r) => r.events[0]!.eventId as string
      )
    )
  )
}

/**
 * One tenant's events and work rows in one transaction, tried again (up to 5 times) when the server's lock table is
 * full (SQLSTATE 53200): the lock table is shared by every database of the server, and other work on a shared
 * server can fill it for a moment.
 */
const loadTenant = async (db: pg.Pool, schema: string, events: number, streams: number) => {
  for (let attempt = 1; ; attempt++) {
    const client = await db.connect()
    try {
      await client.query("BEGIN")
      await Whizbang.load(client, 0, events, streams, undefined, schema)
      await client.query("COMMIT")
      return
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined)
      if ((error as { code?: string }).code !== "53200" || attempt >= 5) throw error
      await sleep(1_000 * attempt)
    } finally {
      client.release()
    }
  }
}

const verifyTenant = async (db: pg.Pool, schema: string, events: number, streams: number) =>
  Domain.verify(Domain.expected(events, streams), await Whizbang.readModels(db, schema)).map((p) => `${schema}: ${p}`)

export const run = async (serverUrl: string, profile: Profile, log: (s: string) => void): Promise<Result> => {
  const t = profile.tenants
  const { events, streams } = profile.throughput
  const eventsPerTenant = Math.floor(events / t.tenants)
  const streamsPerTenant = Math.max(1, Math.floor(streams / t.tenants))
  const total = eventsPerTenant * t.tenants
  if (eventsPerTenant < 1) throw new Error(`--tenants ${t.tenants} is more than the ${events} events`)
  const problems: Array<string> = []

  const floor = await TenantsFloor.run(serverUrl, { tenants: t.tenants, loops: t.workers, events, streams }, log)
  problems.push(...floor.problems.map((p) => `floor: ${p}`))
  const ref = await single(serverUrl, profile, log)
  problems.push(...ref.problems.map((p) => `single tenant: ${p}`))

  return PG.withFreshDatabase(serverUrl, "tn", async (url) => {
    const db = PG.pool(url, 6)
    const sampler = await ActivitySampler.start(serverUrl, databaseOf(url))
    const workers: Array<TenantWorkerProcess.TenantWorker> = []
    const ids = Array.from({ length: t.tenants }, (_, k) => tenantId(k + 1))
    try {
      // 2. Provisioning (the default tenant's schema first, as a single-tenant service would have it).
      sampler.part("provisioning")
      await Whizbang.migrate(url)
      const p0 = now()
      await provision(url, [...ids, replayTenant])
      const provisionSeconds = (now() - p0) / 1000
      log(
        `provisioned ${ids.length + 1} tenants in ${Stats.fmt(provisionSeconds, 1)} s (${Stats.fmt((ids.length + 1) / provisionSeconds, 1)}/s)`
      )

      // 3. Throughput.
      sampler.part("loading")
      await inParallel(ids, 4, (id) => loadTenant(db, `tenant_${id}`, eventsPerTenant, streamsPerTenant))
      await Whizbang.load(db, 0, t.replayEvents, t.replayStreams, [], `tenant_${replayTenant}`)
      log(`loaded ${Stats.fmt(total)} events over ${ids.length} tenants and ${Stats.fmt(t.replayEvents)} replay events`)
      for (let k = 1; k <= t.workers; k++) {
        workers.push(
          await TenantWorkerProcess.start({
            url,
            schema: Whizbang.schema,
            applicationName: `bench-tenants-w${k}`,
            maxConnections: budget.maxConnections,
            options: budget.options,
            idleTimeToLive,
            idleCheck
          })
        )
      }
      const costs = await StatementCosts.start(url, log)
      sampler.part("throughput")
      const roundTrips = () => workers.reduce((n, w) => n + w.status.queries, 0)
      const tripsAtGo = roundTrips()
      const go = now()
      for (const w of workers) TenantWorkerProcess.go(w)
      const applied = () => workers.reduce((n, w) => n + w.status.applied, 0)
      await TenantWorkerProcess.until(workers, () => applied() >= total * 2, 1_800_000, `${total * 2} pairs applied`)
      await sleep(400) // the next status carries the last commit
      const firstClaim = Math.min(...workers.filter((w) => w.status.started > 0).map((w) => w.status.started))
      const lastCommit = Math.max(...workers.map((w) => w.status.lastCommit))
      const rates = {
        seconds: (lastCommit - firstClaim) / 1000,
        eventsPerSecond: total / ((lastCommit - firstClaim) / 1000),
        fromStartSeconds: (lastCommit - go) / 1000,
        fromStartEventsPerSecond: total / ((lastCommit - go) / 1000)
      }
      log(
        `tenants throughput: ${Stats.fmt(rates.eventsPerSecond)} events/s first claim -> last commit, ${Stats.fmt(rates.fromStartEventsPerSecond)} from the fleets' start`
      )
      for (const line of (await costs?.finish(ids.length)) ?? []) log(`  ${line}`)
      await inParallel(
        ids,
        4,
        async (id) => void problems.push(...(await verifyTenant(db, `tenant_${id}`, eventsPerTenant, streamsPerTenant)))
      )

      // 4. Idle.
      sampler.part("going idle")
      await TenantWorkerProcess.until(workers, () => workers.every((w) => w.status.active === 0), 300_000, "every tenant let go")
      await sleep(400) // the next status carries the last round trips
      const throughput = { ...rates, roundTripsPerTenant: (roundTrips() - tripsAtGo) / ids.length }
      log(`tenants' round trips: ${Stats.fmt(throughput.roundTripsPerTenant, 1)} per tenant (fleets' start -> every tenant let go)`)
      sampler.part("idle")
      const idle = await idleWindow(sampler, t.idleSeconds, () => workers.reduce((n, w) => n + w.status.queries, 0))
      log(
        `${ids.length} idle tenants: ${idle.transactions} transactions in ${idle.seconds} s; the worker processes' own round trips: ${idle.workerRoundTrips}`
      )

      // 5. Lag of quiet tenants, without and during a replay.
      const quiet = ids.slice(0, Math.min(t.quietTenants, ids.length))
      const appended = new Map<string, { readonly at: number; readonly window: Lag["window"] | "warm-up" }>()
      const committed = new Map<string, { counter?: number; summary?: number }>()
      const onCommit = (perspective: string, eventIds: ReadonlyArray<string>, at: number) => {
        for (const id of eventIds) {
          const c = committed.get(id) ?? committed.set(id, {}).get(id)!
          c[perspective as "counter" | "summary"] = at
        }
      }
      for (const w of workers) TenantWorkerProcess.report(w, onCommit)
      const counts = new Map(quiet.map((id) => [id, 0]))
      let window: Lag["window"] | "warm-up" = "warm-up"
      let appending = true
      let failures = 0
      /** Pairs the appender's own services applied (`serve: []`, yet a tenant's services held by requests run its worker). */
      let appenderApplied = 0
      const windows: Array<{ window: Lag["window"]; from: number; to: number }> = []
      const replay = await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            // Its log stays quiet: this process (tsx) and the bundled workers see different handler source text, so
            // each start warns that the perspectives' fingerprints differ (a bench artefact, not a change of logic).
            const context = yield* Layer.build(
              appenderLayer(url, (perspective, eventIds, at) => {
                appenderApplied += eventIds.length
                onCommit(perspective, eventIds, at)
              })
            ).pipe(Effect.provideService(References.MinimumLogLevel, "Error"))
            const append = (tenant: string, i: number) =>
              Effect.runPromise(
                appendOne(tenant, i, streamsPerTenant).pipe(
                  Effect.provide(context),
                  Effect.provideService(References.MinimumLogLevel, "Error")
                )
              )
            return yield* Effect.promise(async () => {
              sampler.part("lag")
              const period = 1000 / t.quietRate
              const loops = quiet.map(async (tenant, q) => {
                await sleep((period * q) / quiet.length) // spread the tenants over the period
                let next = now()
                while (appending) {
                  const i = eventsPerTenant + counts.get(tenant)!
                  const w = window
                  try {
                    const id = await append(tenant, i)
                    appended.set(id, { at: now(), window: w })
                    counts.set(tenant, counts.get(tenant)! + 1)
                  } catch (error) {
                    failures++
                    if (failures <= 3) log(`quiet append failed: ${String(error)}`)
                  }
                  next += period
                  await sleep(Math.max(0, next - now()))
                }
              })
              // Warm-up: every quiet tenant's services started here and in the workers.
              await sleep(10_000)
              window = "without replay"
              const a0 = now()
              await sleep(t.lagSeconds * 1000)
              windows.push({ window: "without replay", from: a0, to: now() })
              window = "during backlog"
              sampler.part("lag during backlog")
              const b0 = now()
              await db.query(`BEGIN;
                INSERT INTO tenant_${replayTenant}.wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
                  SELECT gen_random_uuid(), stream_id, p, event_id, abs(hashtext(stream_id::text)) % 10000
                  FROM tenant_${replayTenant}.wh_events CROSS JOIN unnest(ARRAY['counter', 'summary']) p;
                SELECT pg_notify('wh_work', 'tenant_${replayTenant}');
                COMMIT`)
              const deadline = now() + 600_000
              while (now() < deadline) {
                await sleep(250)
                const left = await db.query<{ busy: boolean }>(
                  `SELECT EXISTS (SELECT 1 FROM tenant_${replayTenant}.wh_perspective_events) AS busy`
                )
                if (!left.rows[0]!.busy) break
              }
              const b1 = now()
              windows.push({ window: "during backlog", from: b0, to: b1 })
              window = "warm-up"
              await sleep(2_000)
              // The replay: both perspectives rebuilt as an operator does (`whizbang rebuild --tenant replay`), every
              // type they handle, so the history is planned for the replay path; over when the plan is empty.
              window = "during replay"
              sampler.part("lag during replay")
              const r0 = now()
              await Effect.runPromise(
                Effect.forEach(["counter", "summary"], (perspective) => Rewind.rebuild({ perspective, batchSize: 2_000 }), {
                  discard: true
                }).pipe(Effect.provide(PgClient.layer({ url, schema: `tenant_${replayTenant}`, maxConnections: 1 })))
              )
              const replayDeadline = now() + 600_000
              while (now() < replayDeadline) {
                await sleep(250)
                const left = await db.query<{ busy: boolean }>(
                  `SELECT EXISTS (SELECT 1 FROM tenant_${replayTenant}.wh_perspective_backfill)
                       OR EXISTS (SELECT 1 FROM tenant_${replayTenant}.wh_perspective_events) AS busy`
                )
                if (!left.rows[0]!.busy) break
              }
              const r1 = now()
              windows.push({ window: "during replay", from: r0, to: r1 })
              window = "warm-up"
              appending = false
              await Promise.all(loops)
              // Every quiet append committed in both read models (or 30 s passed).
              const settleBy = now() + 30_000
              while (
                now() < settleBy &&
                [...appended.keys()].some((id) => committed.get(id)?.summary === undefined || committed.get(id)?.counter === undefined)
              )
                await sleep(50)
              return { seconds: (r1 - r0) / 1000, backlogSeconds: (b1 - b0) / 1000 }
            })
          })
        )
      )
      for (const w of workers) TenantWorkerProcess.report(w, undefined)
      if (failures > 0) problems.push(`${failures} quiet appends failed`)
      const lag: Array<Lag> = windows.map(({ window: name, from, to }) => {
        const samples: Array<number> = []
        let missing = 0
        for (const [id, a] of appended) {
          if (a.window !== name) continue
          const c = committed.get(id)
          if (c?.counter === undefined || c.summary === undefined) missing++
          else samples.push(Math.max(c.counter, c.summary) - a.at)
        }
        if (missing > 0) problems.push(`${name}: ${missing} quiet appends not committed in both read models`)
        const loop = Stats.latency(workers.flatMap((w) => w.loop.filter((l) => l.at >= from && l.at <= to).map((l) => l.maxMs)))
        return {
          window: name,
          seconds: (to - from) / 1000,
          appends: samples.length,
          latency: Stats.latency(samples),
          loopDelay: { p99: loop.p99, max: loop.max }
        }
      })
      for (const l of lag)
        log(
          `quiet tenants ${l.window}: p50 ${Stats.fmt(l.latency.p50, 1)} ms, p99 ${Stats.fmt(l.latency.p99, 1)} ms; worker processes' event-loop delay p99 ${Stats.fmt(l.loopDelay.p99, 1)} ms, max ${Stats.fmt(l.loopDelay.max, 1)} ms`
        )
      log(`backlog: ${Stats.fmt(t.replayEvents)} events (x2 perspectives) in ${Stats.fmt(replay.backlogSeconds, 1)} s`)
      log(`replay: ${Stats.fmt(t.replayEvents)} events (x2 perspectives) in ${Stats.fmt(replay.seconds, 1)} s`)

      // Checks: the replay tenant and the quiet tenants equal their folds.
      problems.push(...(await verifyTenant(db, `tenant_${replayTenant}`, t.replayEvents, t.replayStreams)))
      for (const id of quiet)
        problems.push(...(await verifyTenant(db, `tenant_${id}`, eventsPerTenant + counts.get(id)!, streamsPerTenant)))

      const peaksByPart = sampler.peaks()
      const peakConnections: Record<string, number> = {}
      for (const part of Object.values(peaksByPart))
        for (const [app, n] of Object.entries(part)) peakConnections[app] = Math.max(peakConnections[app] ?? 0, n)
      return {
        tenants: t.tenants,
        workers: t.workers,
        events: total,
        eventsPerTenant,
        streamsPerTenant,
        single: { eventsPerSecond: ref.eventsPerSecond, seconds: ref.seconds, idle: ref.idle, peakConnections: ref.peakConnections },
        floor,
        provisioning: { tenants: ids.length + 1, seconds: provisionSeconds, perSecond: (ids.length + 1) / provisionSeconds },
        throughput,
        idle,
        peakConnections,
        peaksByPart,
        lag,
        replay: { events: t.replayEvents, seconds: replay.seconds, eventsPerSecond: t.replayEvents / replay.seconds },
        backlog: { events: t.replayEvents, seconds: replay.backlogSeconds, eventsPerSecond: t.replayEvents / replay.backlogSeconds },
        appenderApplied,
        peakRssMb: Math.max(...workers.map((w) => w.peakRss)) / 2 ** 20,
        problems: problems.slice(0, 20)
      }
    } finally {
      await Promise.all(workers.map(TenantWorkerProcess.stop))
      await sampler.stop()
      await db.end()
    }
  })
}

export const table = (r: Result, profile: Profile): Table => {
  const workerPeaks = Object.entries(r.peakConnections).filter(([app]) => app.startsWith("bench-tenants-w"))
  const peak = Math.max(0, ...workerPeaks.map(([, n]) => n))
  const [without, during, backlog] = (["without replay", "during replay", "during backlog"] as const).map((w) =>
    r.lag.find((l) => l.window === w)
  )
  const tenantStatements = Object.entries(r.idle.statements)
    .map(([app, n]) => `${app} ${n}`)
    .join(", ")
  const singleStatements = Object.entries(r.single.idle.statements)
    .map(([app, n]) => `${app} ${n}`)
    .join(", ")
  return {
    title: `t. Tenants: ${Stats.fmt(r.tenants)} tenants x 2 perspectives, ${r.workers} worker processes (Whizbang.layerTenants) — against one tenant in the same run`,
    head: ["figure", "tenants", "single tenant", "ratio", "target"],
    rows: [
      [
        "throughput, events/s (first claim -> last commit)",
        Stats.fmt(r.throughput.eventsPerSecond),
        Stats.fmt(r.single.eventsPerSecond),
        Stats.ratio(r.throughput.eventsPerSecond, r.single.eventsPerSecond),
        ">= 0.8x"
      ],
      [
        `floor: hand-written SQL, ${Stats.fmt(r.floor.tenants)} schemas / one schema, events/s`,
        Stats.fmt(r.floor.schemas),
        Stats.fmt(r.floor.oneSchema),
        Stats.ratio(r.floor.schemas, r.floor.oneSchema),
        "-"
      ],
      [
        "throughput, events/s (fleets' start -> last commit)",
        Stats.fmt(r.throughput.fromStartEventsPerSecond),
        Stats.fmt(r.single.eventsPerSecond),
        Stats.ratio(r.throughput.fromStartEventsPerSecond, r.single.eventsPerSecond),
        "-"
      ],
      ["peak connections per worker process", String(peak), Stats.fmt(r.single.peakConnections, 1), "-", "<= 10"],
      [
        `idle: transactions/s over ${r.idle.seconds} s (pg_stat_database)`,
        Stats.fmt(r.idle.transactionsPerSecond, 2),
        Stats.fmt(r.single.idle.transactionsPerSecond, 2),
        Stats.ratio(r.idle.transactionsPerSecond, r.single.idle.transactionsPerSecond),
        "<= single tenant"
      ],
      [
        "round trips per tenant (the worker processes' own count, fleets' start -> every tenant let go)",
        Stats.fmt(r.throughput.roundTripsPerTenant, 1),
        "-",
        "-",
        "-"
      ],
      [
        `idle: the worker processes' own round trips/s over ${r.idle.seconds} s`,
        Stats.fmt((r.idle.workerRoundTrips ?? Number.NaN) / r.idle.seconds, 2),
        "-",
        "-",
        "0"
      ],
      [
        "quiet tenants' lag p99, ms (during replay / without)",
        `${Stats.fmt(during?.latency.p99 ?? Number.NaN, 1)} / ${Stats.fmt(without?.latency.p99 ?? Number.NaN, 1)}`,
        "-",
        Stats.ratio(during?.latency.p99 ?? Number.NaN, without?.latency.p99 ?? Number.NaN),
        "<= 1.10x"
      ],
      [
        "quiet tenants' lag p50, ms (during replay / without)",
        `${Stats.fmt(during?.latency.p50 ?? Number.NaN, 1)} / ${Stats.fmt(without?.latency.p50 ?? Number.NaN, 1)}`,
        "-",
        Stats.ratio(during?.latency.p50 ?? Number.NaN, without?.latency.p50 ?? Number.NaN),
        "-"
      ],
      [
        "quiet tenants' lag p99, ms (during a backlog / without)",
        `${Stats.fmt(backlog?.latency.p99 ?? Number.NaN, 1)} / ${Stats.fmt(without?.latency.p99 ?? Number.NaN, 1)}`,
        "-",
        Stats.ratio(backlog?.latency.p99 ?? Number.NaN, without?.latency.p99 ?? Number.NaN),
        "-"
      ],
      ["provisioning, tenants/s (created + migrated)", Stats.fmt(r.provisioning.perSecond, 1), "-", "-", "-"],
      ["replay (whizbang rebuild), events/s (x2 perspectives)", Stats.fmt(r.replay.eventsPerSecond), "-", "-", "-"],
      ["backlog (work rows), events/s (x2 perspectives)", Stats.fmt(r.backlog?.eventsPerSecond ?? Number.NaN), "-", "-", "-"],
      ["read models = folds", r.problems.length === 0 ? "yes" : "NO", "-", "-", "-"]
    ],
    notes: [
      `${Stats.fmt(r.events)} events (scenario a's ${profile.throughput.events.toLocaleString("en-US")}) spread over ${Stats.fmt(r.tenants)} tenants: ${r.eventsPerTenant} events over ${r.streamsPerTenant} streams each, loaded set-based with their work rows before the workers start (as in a); single tenant: the same events in one schema, ${r.workers} scenario-a worker processes (default options)`,
      `floor: scenario a's set-based baseline (no leases, no fencing; ${r.floor.loops} loops) over the same events in one schema, and over ${Stats.fmt(r.floor.tenants)} schemas holding copies of the queue tables (LIKE .. INCLUDING ALL) and the read-model tables, the loops taking the schemas in turn (each drained whole, no last empty claim): what the layout itself costs with the least work per tenant (each schema's statements parsed and planned for its own tables); schemas set up in ${Stats.fmt(r.floor.setupSeconds, 1)} s (not counted)`,
      `tenant worker processes: Whizbang.layerTenants, maxConnections ${budget.maxConnections}, maxConcurrentDrainConsumers ${budget.options.maxConcurrentDrainConsumers} (a worker pool of ${budget.options.maxConcurrentDrainConsumers + 2} shared by all tenants), 1 LISTEN connection; idleTimeToLive ${idleTimeToLive}, idleCheck ${idleCheck}, maxActive 32 and timeSlice 5 s (defaults); peak sessions per process by part: ${JSON.stringify(
        Object.fromEntries(Object.entries(r.peaksByPart).map(([part, apps]) => [part, apps]))
      )}`,
      `idle: xact_commit + xact_rollback of the database over ${r.idle.seconds} s, read from another database, with every tenant let go (tenants) / the single-tenant worker processes idle after their run; statements seen in pg_stat_activity (lower bound): tenants ${tenantStatements || "none"}; single tenant ${singleStatements || "none"}; the tenant worker processes' own round trips over the window (their count of every query they sent): ${r.idle.workerRoundTrips ?? "-"} (the database's transactions count autovacuum's too)`,
      `lag: ${profile.tenants.quietTenants} quiet tenants x ${profile.tenants.quietRate} appends/s through Tenants.run in the bench process (layerTenants, serve: []), append completion -> both read models committed; ${without?.appends ?? 0} appends over ${Stats.fmt(without?.seconds ?? Number.NaN, 1)} s without, ${during?.appends ?? 0} over ${Stats.fmt(during?.seconds ?? Number.NaN, 1)} s during the replay of ${Stats.fmt(r.replay.events)} events (whizbang rebuild of both perspectives: the replay path), ${backlog?.appends ?? 0} over ${Stats.fmt(backlog?.seconds ?? Number.NaN, 1)} s during a backlog of the same events (a work row per event and perspective, one transaction); max ${Stats.fmt(without?.latency.max ?? Number.NaN, 1)} / ${Stats.fmt(during?.latency.max ?? Number.NaN, 1)} / ${Stats.fmt(backlog?.latency.max ?? Number.NaN, 1)} ms (without / replay / backlog); the worker processes' event-loop delay (longest per 200 ms) p99 ${Stats.fmt(without?.loopDelay.p99 ?? Number.NaN, 1)} / ${Stats.fmt(during?.loopDelay.p99 ?? Number.NaN, 1)} / ${Stats.fmt(backlog?.loopDelay.p99 ?? Number.NaN, 1)} ms, max ${Stats.fmt(without?.loopDelay.max ?? Number.NaN, 1)} / ${Stats.fmt(during?.loopDelay.max ?? Number.NaN, 1)} / ${Stats.fmt(backlog?.loopDelay.max ?? Number.NaN, 1)} ms; (event, perspective) pairs applied by the appender process itself: ${Stats.fmt(r.appenderApplied)}`,
      `provisioning: ${r.provisioning.tenants} tenants in ${Stats.fmt(r.provisioning.seconds, 1)} s, Tenants.add 4 at a time (schema, migrations, perspectives laid out); worker process peak RSS ${Stats.fmt(r.peakRssMb)} MB`,
      ...(r.problems.length > 0 ? [`problems: ${r.problems.slice(0, 5).join("; ")}`] : [])
    ]
  }
}
