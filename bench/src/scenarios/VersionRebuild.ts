/**
 * Scenario v: a perspective version rebuilt on a live service. A history of N events is stored with version 1 of
 * both read models materialized (set-based, as the worker would have left them: rows, cursors, no work). Then a new
 * deploy starts — one worker in a child process (`src/WorkerProcess.ts`) declaring `counter` v1, `summary` v1 and
 * `counter` v2 (`Domain.counterV2Perspective`, a changed apply) — and registers v2: `building`, its history replayed
 * by `PgHistoryReplay` (chunks read in order, folded in memory, written in bulk; live work first), cut over
 * automatically once caught up. Meanwhile this process appends at a steady rate through
 * `EventStore.append` (an old deploy's ports, declaring v1 only; the database routes each append to every version).
 *
 * Measured:
 * - rebuild rate = history events (as registered) / (registration -> v2 live), both times from the registry row
 *   (`registered_at`, `state_changed_at`: the database's clock); the cutover's own time from its log line;
 * - the same history rebuilt by the set-based baseline (`systems/Baseline.ts`) in a fresh database with the same events:
 *   the work rows written for every event in one statement, then drained by one loop; no live appends there;
 * - v1 lag: per live append committed before v2 went live, append completion (this process) -> both v1 read models
 *   committed (the worker's `onPerspectiveEventProcessed` hook, after its commit, reported over IPC with its time);
 *   both clocks are `performance.timeOrigin + performance.now()`, as in scenario c.
 * Checked: v2, the served view, counter v1 and summary each equal the fold of all events (history and live appends).
 */
import { writeFileSync } from "node:fs"
import * as Domain from "../Domain.js"
import type pg from "pg"
import type { Profile } from "../Profile.js"
import * as PG from "../Postgres.js"
import * as Stats from "../Stats.js"
import * as Baseline from "../systems/Baseline.js"
import * as Whizbang from "../systems/Whizbang.js"
import * as Versions from "../systems/WhizbangVersions.js"
import type { Table } from "../Table.js"
import * as WorkerProcess from "../WorkerProcess.js"
import { tunedOptions } from "./Throughput.js"

const v2 = "counter__v2"

export interface BaselineRun {
  /** Writing a work row per history event (one statement) and ANALYZE. */
  readonly writeMs: number
  readonly drainMs: number
  readonly ms: number
  readonly eventsPerSecond: number
  readonly problems: ReadonlyArray<string>
}

export interface Run {
  readonly events: number
  readonly streams: number
  /** Events and streams of v2's history, as registered. */
  readonly historyEvents: number
  readonly historyStreams: number
  readonly appendRate: number
  readonly achievedRate: number
  /** Live appends committed before v2 went live, and in all. */
  readonly appendedDuringRebuild: number
  readonly appended: number
  /** Registration -> v2 live (the switch's transaction). */
  readonly rebuildMs: number
  /** Registration -> the start of the cutover (v2 caught up). */
  readonly caughtUpMs: number
  readonly rebuildEventsPerSecond: number
  /** The cutover's own time (ready -> switch committed), from its log line; NaN if not seen. */
  readonly cutoverMs: number
  readonly baseline: BaselineRun
  /** Whizbang's rebuild rate over the baseline's. */
  readonly ratio: number
  /** Append -> both v1 read models (counter v1, summary) committed, for appends committed before v2 went live. */
  readonly lag: Stats.Latency
  /** The same, for the appends made after the worker process's first second (its cold start). */
  readonly lagAfterFirstSecond: Stats.Latency
  /** Append -> counter v1 committed (the version being replaced), same appends. */
  readonly lagCounterV1: Stats.Latency
  /** The v1 lag (both models) of the appends of each tenth of the time from the first append to v2 live. */
  readonly lagByTenth: ReadonlyArray<Stats.Latency>
  /** Autovacuum's ANALYZE runs of the work table between registration and v2 live, and the first one's time after registration (s). */
  readonly autoAnalyzes: number
  readonly firstAutoAnalyzeS: number
  /** Worker process CPU from ready to the end of the run, per 1,000 history events. */
  readonly workerCpuMsPer1000: number
  readonly readyRssMb: number
  readonly peakRssMb: number
  readonly workerRuns: string
  /** A run whose worker was to be killed mid-replay (`killAt`); `kill` says what happened (undefined: not sent). */
  readonly killRun: boolean
  readonly kill: Kill | undefined
  readonly problems: ReadonlyArray<string>
}

/** A replaying worker killed (SIGKILL) and a new worker process started in its place. */
export interface Kill {
  /** History streams still planned when the kill was sent, and after the killed process exited (its open chunk rolled back). */
  readonly plannedAtKill: number
  readonly plannedAfterExit: number
  /** Kill -> the new process ready (its start-up); kill -> its first chunk committed (planned streams fell). */
  readonly readyMs: number
  readonly resumedMs: number
  /** History streams the new process replayed (all that were still planned: not from zero). */
  readonly replayedAfter: number
  /** Live appends made before the kill whose commits the killed process never reported (the folds still check them). */
  readonly unreported: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const now = () => performance.timeOrigin + performance.now()
const mb = (bytes: number) => bytes / 2 ** 20

/** The baseline's rebuild of `counter__v2` from the same history, in its own database. */
const baseline = (serverUrl: string, events: number, streams: number) =>
  PG.withFreshDatabase(serverUrl, "verb", async (url): Promise<BaselineRun> => {
    const db = PG.pool(url)
    try {
      await Whizbang.migrate(url)
      await Whizbang.load(db, 0, events, streams, [])
      const table = "wh_per_counter__v2"
      await Baseline.createModelTables(db, [table])
      const start = performance.now()
      await db.query(`INSERT INTO ${Whizbang.schema}.wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
        SELECT gen_random_uuid(), stream_id, '${v2}', event_id, abs(hashtext(stream_id::text)) % 10000 FROM ${Whizbang.schema}.wh_events`)
      await db.query(`ANALYZE ${Whizbang.schema}.wh_perspective_events`)
      const written = performance.now()
      const r = await Baseline.run(db, 1, 600, [{ perspective: v2, table, initial: Domain.counterV2Initial, fold: Domain.foldCounterV2 }])
      const problems = Domain.verifyModel(v2, Domain.expectedCounterV2(events, streams), await Versions.readTable(db, Versions.tableOf(v2)))
      if (r.workRows !== events) problems.push(`baseline applied ${r.workRows} work rows, expected ${events}`)
      const ms = r.end - start
      return { writeMs: written - start, drainMs: r.end - written, ms, eventsPerSecond: events / (ms / 1000), problems }
    } finally {
      await db.end()
    }
  })

/** Polls `check` every 100 ms until it holds; fails when the worker exits or commits nothing for `stallMs`. */
const until = async (worker: WorkerProcess.Worker, check: () => Promise<boolean>, stallMs: number, what: string) => {
  const started = Date.now()
  for (;;) {
    if (await check()) return
    if (worker.exited !== undefined) throw new Error(`${worker.exited} (${what})`)
    if (Date.now() - Math.max(started, worker.progress.at) > stallMs)
      throw new Error(`worker stalled: nothing committed for ${stallMs} ms (${what})`)
    await sleep(100)
  }
}

/**
 * Kills the replaying worker (SIGKILL) once `share` of v2's history streams are replayed, starts a new worker process
 * in its place, and times it: ready, then its first chunk committed (the planned streams fall below what the killed
 * one left). `step` runs at most every 50 ms and answers the new worker once it started.
 */
const killer = async (
  db: pg.Pool,
  share: number,
  current: () => WorkerProcess.Worker,
  startWorker: () => Promise<WorkerProcess.Worker>,
  log: (s: string) => void
) => {
  let checkedAt = 0
  let state:
    | { readonly phase: "replaying" }
    | {
        readonly phase: "resuming"
        readonly killedAt: number
        readonly plannedAtKill: number
        readonly plannedAfterExit: number
        readonly readyAt: number
      }
    | { readonly phase: "done"; readonly killedAt: number; readonly kill: Omit<Kill, "unreported"> } = { phase: "replaying" }
  const step = async (): Promise<WorkerProcess.Worker | undefined> => {
    if (state.phase === "done" || now() - checkedAt < 50) return undefined
    checkedAt = now()
    const planned = (await Versions.leftOver(db)).planned
    if (state.phase === "resuming") {
      if (planned < state.plannedAfterExit) {
        const kill: Omit<Kill, "unreported"> = {
          plannedAtKill: state.plannedAtKill,
          plannedAfterExit: state.plannedAfterExit,
          readyMs: state.readyAt - state.killedAt,
          resumedMs: now() - state.killedAt,
          replayedAfter: state.plannedAfterExit
        }
        state = { phase: "done", killedAt: state.killedAt, kill }
        log(
          `version rebuild: replay resumed ${Stats.fmt(kill.resumedMs)} ms after the kill (new worker ready after ${Stats.fmt(kill.readyMs)} ms)`
        )
      }
      return undefined
    }
    const row = await Versions.versionRow(db, v2)
    if (row === undefined || row.historyStreams === 0 || planned > row.historyStreams * (1 - share)) return undefined
    const killed = current()
    const exited = new Promise<void>((resolve) => killed.child.once("exit", () => resolve()))
    const killedAt = now()
    killed.child.kill("SIGKILL")
    await exited
    const plannedAfterExit = (await Versions.leftOver(db)).planned
    log(
      `version rebuild: worker killed (SIGKILL) with ${Stats.fmt(planned)} of ${Stats.fmt(row.historyStreams)} streams still planned (${Stats.fmt(plannedAfterExit)} after its exit); starting another`
    )
    const next = await startWorker()
    state = { phase: "resuming", killedAt, plannedAtKill: planned, plannedAfterExit, readyAt: now() }
    return next
  }
  return {
    step,
    killedAt: (): number | undefined => (state.phase === "replaying" ? undefined : state.killedAt),
    result: (unreported: number): Kill | undefined => (state.phase === "done" ? { ...state.kill, unreported } : undefined)
  }
}

const whizbang = (
  serverUrl: string,
  events: number,
  streams: number,
  rate: number,
  analyzeEveryMs: number | undefined,
  killAt: number | undefined,
  builder: boolean,
  log: (s: string) => void
) =>
  PG.withFreshDatabase(serverUrl, "ver", async (url) => {
    const db = PG.pool(url)
    try {
      await Whizbang.migrate(url)
      // Diagnosis: plans of the statements slower than this many ms go to the server log (auto_explain, analyzed).
      const explainMs = Number(process.env.BENCH_AUTO_EXPLAIN_MS ?? 0)
      if (explainMs > 0) {
        const name = new URL(url).pathname.slice(1)
        for (const setting of [
          "session_preload_libraries = 'auto_explain'",
          `auto_explain.log_min_duration = '${explainMs}ms'`,
          "auto_explain.log_analyze = on"
        ])
          await db.query(`ALTER DATABASE "${name}" SET ${setting}`)
      }
      await Versions.registerV1(url)
      await Whizbang.load(db, 0, events, streams, [])
      await Versions.loadV1Models(db)
      // The load's pages written out now: the OS writes dirty pages back about 30 s after they were dirtied, and the
      // 1,000,000 events' hundreds of MB written back during the live part made every commit wait on its WAL flush
      // (fsync waits of 300+ ms seen in pg_stat_activity) — the bench's own load, not the replay, in the lag.
      // A role without the right to CHECKPOINT (not a superuser nor pg_checkpoint) runs without it, and says so.
      await db
        .query("CHECKPOINT")
        .catch((error: unknown) =>
          log(`version rebuild: no CHECKPOINT after the load (${String(error)}); its write-back may fall in the measured window`)
        )
      log(`version rebuild: ${Stats.fmt(events)} events loaded with v1 materialized; starting the v1 + v2 worker`)
      const appendedAt = new Map<string, number>()
      const v1 = new Map<string, { counter?: number; summary?: number }>()
      const onCommits = (perspective: string, ids: ReadonlyArray<string>, at: number) => {
        for (const id of ids) {
          const seen = v1.get(id) ?? v1.set(id, {}).get(id)!
          seen[perspective as "counter" | "summary"] = at
        }
      }
      const entry = await WorkerProcess.entry()
      return await Versions.withAppender(url, async (store) => {
        const startWorker = () =>
          WorkerProcess.start(url, tunedOptions, 0, false, {
            perspectives: "with-v2",
            report: ["counter", "summary"],
            onCommits,
            ...(builder ? { versions: { replay: "off" } } : {})
          })
        // --rebuild-builder: the history replayed by a builder process beside the worker (whose replay is off).
        const builderProcess = builder
          ? await WorkerProcess.start(url, tunedOptions, 0, false, { perspectives: "with-v2", role: "builder" })
          : undefined
        let worker = await startWorker()
        const first = worker
        let analyzer: ReturnType<typeof setInterval> | undefined
        let sampler: ReturnType<typeof setInterval> | undefined
        try {
          // Live appends: global indexes events, events + 1, ... (the same formulas: stream i % S, its next sequence).
          let sent = 0
          let failed = 0
          let inFlight = 0
          let live: Versions.VersionRow | undefined
          let polling = false
          let polledAt = 0
          const start = now()
          // --rebuild-analyze-ms: the work table's statistics refreshed during the rebuild (not what a deployment does by itself).
          analyzer =
            analyzeEveryMs === undefined
              ? undefined
              : setInterval(() => void db.query(`ANALYZE ${Whizbang.schema}.wh_perspective_events`).catch(() => undefined), analyzeEveryMs)
          // Autovacuum's ANALYZE of the work table, sampled every second (the planner's view of the pending work).
          const analyzesBefore = (await Versions.workTableAnalyzes(db)).auto
          const analyzes: Array<{ readonly at: number; readonly auto: number }> = []
          sampler = setInterval(
            () =>
              void Versions.workTableAnalyzes(db).then(
                (a) => void analyzes.push({ at: now(), auto: a.auto }),
                () => undefined
              ),
            1000
          )
          // --rebuild-kill-at: the replaying worker killed once that share of the history's streams is replayed.
          const killing = killAt === undefined ? undefined : await killer(db, killAt, () => worker, startWorker, log)
          while (live === undefined) {
            const t = now()
            if (killing !== undefined) {
              const next = await killing.step()
              if (next !== undefined) worker = next
            }
            const due = Math.floor(((t - start) / 1000) * rate) - sent
            for (let j = 0; j < due && inFlight < 256; j++) {
              const i = events + sent++
              inFlight++
              const stream = Domain.streamId(i % streams)
              void Whizbang.appendOne(store, stream, Domain.amountOf(i), Math.floor(i / streams) + 1)
                .then(
                  (id) => void appendedAt.set(id, now()),
                  () => void failed++
                )
                .finally(() => void inFlight--)
            }
            if (!polling && t - polledAt >= 100) {
              polling = true
              polledAt = t
              void Versions.versionRow(db, v2)
                .then((row) => {
                  if (row?.state === "live") live = row
                })
                .finally(() => {
                  polling = false
                })
            }
            if (worker.exited !== undefined) throw new Error(worker.exited)
            if (t - Math.max(start, worker.progress.at) > 120_000) throw new Error("worker stalled: nothing committed for 120 s (rebuild)")
            await sleep(1)
          }
          if (analyzer) clearInterval(analyzer)
          if (sampler) clearInterval(sampler)
          const achievedRate = sent / ((now() - start) / 1000)
          while (inFlight > 0) await sleep(1)
          const liveRow = live as Versions.VersionRow
          log(`version rebuild: ${v2} live after ${Stats.fmt((liveRow.stateChangedAt - liveRow.registeredAt) / 1000, 1)} s; draining`)
          await until(
            worker,
            async () => {
              const left = await Versions.leftOver(db)
              return left.work === 0 && left.planned === 0
            },
            60_000,
            "drain after the cutover"
          )
          // The last commits travel with the worker's next report (every 100 ms).
          // A killed worker's last commits (up to 100 ms of them) die unreported with it: appends made before the kill
          // may stay unreported (the folds below still check them); every later one must be reported.
          const killedAt = killing?.killedAt() ?? Number.POSITIVE_INFINITY
          const reported = (id: string) => v1.get(id)?.counter !== undefined && v1.get(id)?.summary !== undefined
          const complete = () => [...appendedAt].every(([id, at]) => at < killedAt || reported(id))
          for (let k = 0; k < 50 && !complete(); k++) await sleep(100)
          const unreported = [...appendedAt.keys()].filter((id) => !reported(id)).length
          const problems0: Array<string> = []
          const settled = await WorkerProcess.settle(worker)
          const kill = killing === undefined ? undefined : killing.result(unreported)
          if (killing !== undefined && kill === undefined) problems0.push("the kill was never sent (v2 went live first)")

          const lagBoth: Array<number> = []
          const lagDump: Array<string> = []
          const lagWarm: Array<number> = []
          const lagCounter: Array<number> = []
          const tenths = Array.from({ length: 10 }, () => [] as Array<number>)
          const window = liveRow.stateChangedAt - start
          let during = 0
          for (const [id, at] of appendedAt) {
            if (at > liveRow.stateChangedAt) continue
            during++
            const seen = v1.get(id)
            if (seen?.counter === undefined || seen.summary === undefined) continue
            const lag = Math.max(seen.counter, seen.summary) - at
            lagBoth.push(lag)
            if (at - start >= 1000) lagWarm.push(lag)
            lagCounter.push(seen.counter - at)
            tenths[Math.min(9, Math.max(0, Math.floor((10 * (at - start)) / window)))]!.push(lag)
            if (process.env.BENCH_LAG_DUMP) lagDump.push(`${at.toFixed(1)} ${(at - start).toFixed(1)} ${lag.toFixed(1)}`)
          }
          if (process.env.BENCH_LAG_DUMP) writeFileSync(process.env.BENCH_LAG_DUMP, `${lagDump.join("\n")}\n`)
          const total = events + sent
          const want = Domain.expected(total, streams)
          const wantV2 = Domain.expectedCounterV2(total, streams)
          const problems = [
            ...problems0,
            ...Domain.verifyModel("counter v1", want.counter, await Versions.readTable(db, Versions.tableOf("counter"))),
            ...Domain.verifyModel("summary v1", want.summary, await Versions.readTable(db, Versions.tableOf("summary"))),
            ...Domain.verifyModel("counter v2", wantV2, await Versions.readTable(db, Versions.tableOf(v2))),
            ...Domain.verifyModel("wh_per_counter (served)", wantV2, await Versions.readTable(db, `${Whizbang.schema}.wh_per_counter`))
          ]
          if (failed > 0) problems.push(`${failed} appends failed`)
          if (!complete()) problems.push("some live appends were never reported committed to both v1 read models")
          const left = await Versions.leftOver(db)
          if (left.dead > 0) problems.push(`${left.dead} dead letters`)
          // The cutover's line: the worker's, or the builder's when one runs the build (--rebuild-builder).
          const cutoverLine = [...worker.logs, ...(builderProcess?.logs ?? [])].find((l) =>
            l.message.includes(`reads now served by ${v2}`)
          )?.message
          const cutoverMs = Number(/after (\d+) ms/.exec(cutoverLine ?? "")?.[1] ?? Number.NaN)
          const rebuildMs = liveRow.stateChangedAt - liveRow.registeredAt
          const rebuilding = analyzes.filter((a) => a.at <= liveRow.stateChangedAt)
          const firstAnalyze = rebuilding.find((a) => a.auto > analyzesBefore)
          return {
            runWithoutBaseline: {
              events,
              streams,
              historyEvents: liveRow.historyEvents,
              historyStreams: liveRow.historyStreams,
              appendRate: rate,
              achievedRate,
              appendedDuringRebuild: during,
              appended: sent,
              rebuildMs,
              caughtUpMs: rebuildMs - (Number.isFinite(cutoverMs) ? cutoverMs : 0),
              rebuildEventsPerSecond: liveRow.historyEvents / (rebuildMs / 1000),
              cutoverMs,
              lag: Stats.latency(lagBoth),
              lagAfterFirstSecond: Stats.latency(lagWarm),
              lagCounterV1: Stats.latency(lagCounter),
              lagByTenth: tenths.map(Stats.latency),
              autoAnalyzes: (rebuilding.at(-1)?.auto ?? analyzesBefore) - analyzesBefore,
              firstAutoAnalyzeS: firstAnalyze === undefined ? Number.NaN : (firstAnalyze.at - liveRow.registeredAt) / 1000,
              workerCpuMsPer1000:
                settled === undefined || kill !== undefined
                  ? Number.NaN
                  : (1000 * (settled.cpuMs - worker.ready!.cpuMs)) / liveRow.historyEvents,
              readyRssMb: mb(first.ready!.rss),
              peakRssMb: mb(Math.max(...first.memory.map((m) => m.rss), ...worker.memory.map((m) => m.rss))),
              workerRuns: entry.how,
              killRun: killAt !== undefined,
              kill,
              problems
            },
            logs: worker.logs
          }
        } finally {
          if (analyzer) clearInterval(analyzer)
          if (sampler) clearInterval(sampler)
          await WorkerProcess.stop(worker)
          if (builderProcess !== undefined) await WorkerProcess.stop(builderProcess)
        }
      })
    } finally {
      await db.end()
    }
  })

export interface Result {
  readonly runs: ReadonlyArray<Run>
}

export const run = async (serverUrl: string, profile: Profile, log: (s: string) => void): Promise<Result> => {
  const { events, streams, appendRates, killAt, repetitions, analyzeEveryMs, builder = false } = profile.rebuild
  if (builder && killAt !== undefined) throw new Error("--rebuild-builder runs without the kill run: add --rebuild-kill-at 0")
  const runs: Array<Run> = []
  // One run per rate, then the kill run at the first rate; each against the same repetition's baseline.
  const variants = [
    ...appendRates.map((rate) => ({ rate, killAt: undefined as number | undefined })),
    ...(killAt === undefined ? [] : [{ rate: appendRates[0]!, killAt }])
  ]
  for (let rep = 1; rep <= repetitions; rep++) {
    const base = await baseline(serverUrl, events, streams)
    log(
      `version rebuild (rep ${rep}): baseline x1 rebuilt ${Stats.fmt(events)} events in ${Stats.fmt(base.ms / 1000, 1)} s (${Stats.fmt(base.eventsPerSecond)} events/s)`
    )
    for (const variant of variants) {
      const { runWithoutBaseline: w, logs } = await whizbang(
        serverUrl,
        events,
        streams,
        variant.rate,
        analyzeEveryMs,
        variant.killAt,
        builder,
        log
      )
      for (const l of logs) if (/perspective counter/.test(l.message)) log(`  worker: ${l.message}`)
      const r: Run = {
        ...w,
        baseline: base,
        ratio: w.rebuildEventsPerSecond / base.eventsPerSecond,
        problems: [...w.problems, ...base.problems]
      }
      log(
        `version rebuild (rep ${rep}, ${Stats.fmt(variant.rate)}/s${variant.killAt === undefined ? "" : ", killed"}): whizbang ${Stats.fmt(r.rebuildEventsPerSecond)} events/s (${Stats.fmt(r.rebuildMs / 1000, 1)} s, ${r.ratio.toFixed(2)}x the baseline), cutover ${Stats.fmt(r.cutoverMs)} ms, v1 lag p50 ${Stats.fmt(r.lag.p50, 1)} / p99 ${Stats.fmt(r.lag.p99, 1)} / max ${Stats.fmt(r.lag.max, 1)} ms`
      )
      runs.push(r)
    }
  }
  return { runs }
}

export const table = (result: Result, profile: Profile): Table => {
  const { events, streams, repetitions } = profile.rebuild
  // A column per variant: each live rate, then the kill run.
  const columns = [
    ...profile.rebuild.appendRates.map((rate) => ({
      head: `${Stats.fmt(rate)} appends/s`,
      runs: result.runs.filter((r) => r.appendRate === rate && !r.killRun)
    })),
    ...(profile.rebuild.killAt === undefined
      ? []
      : [
          {
            head: `${Stats.fmt(profile.rebuild.appendRates[0]!)} appends/s, worker killed at ${Math.round(100 * profile.rebuild.killAt)} %`,
            runs: result.runs.filter((r) => r.killRun)
          }
        ])
  ]
  const row = (label: string, cell: (s: (f: (r: Run) => number, digits?: number) => string, runs: ReadonlyArray<Run>) => string) => [
    label,
    ...columns.map(({ runs }) =>
      runs.length === 0 ? "-" : cell((f, digits = 0) => Stats.fmtSpread(Stats.spread(runs.map(f)), digits), runs)
    )
  ]
  const lat = (f: (r: Run) => Stats.Latency) => (s: (g: (r: Run) => number, digits?: number) => string) =>
    `${s((r) => f(r).p50, 1)} / ${s((r) => f(r).p95, 1)} / ${s((r) => f(r).p99, 1)} / ${s((r) => f(r).max, 1)}`
  const killed = (f: (k: Kill) => number) => (s: (g: (r: Run) => number, digits?: number) => string, runs: ReadonlyArray<Run>) =>
    runs.every((r) => r.kill !== undefined) ? s((r) => f(r.kill!)) : "-"
  const first = columns[0]?.runs ?? []
  return {
    title: `v. Version rebuild: counter v2 rebuilt from ${Stats.fmt(events)} events over ${Stats.fmt(streams)} streams (v1 materialized) while live appends go on; worker in a child process (median (min–max) of ${repetitions})`,
    head: ["measure", ...columns.map((c) => c.head)],
    rows: [
      row("v2 history as registered: events / streams", (s) => `${s((r) => r.historyEvents)} / ${s((r) => r.historyStreams)}`),
      row("whizbang: registration -> v2 caught up (cutover starts), s", (s) => s((r) => r.caughtUpMs / 1000, 1)),
      row("whizbang: registration -> v2 live, s", (s) => s((r) => r.rebuildMs / 1000, 1)),
      row("whizbang replay of history, events/s (history / registration -> live)", (s) => s((r) => r.rebuildEventsPerSecond)),
      row("baseline x1 rebuild (work rows written + drained), s", (s) => s((r) => r.baseline.ms / 1000, 1)),
      row("baseline x1 rebuild, events/s", (s) => s((r) => r.baseline.eventsPerSecond)),
      row("whizbang / baseline (target >= 1.0 at 200/s, >= 0.5 at 1,000/s)", (s) => s((r) => r.ratio, 2)),
      row("cutover (ready -> switch committed), ms", (s) => s((r) => r.cutoverMs)),
      row("live appends/s, achieved", (s) => s((r) => r.achievedRate)),
      row("live appends committed before v2 went live", (s) => s((r) => r.appendedDuringRebuild)),
      row(
        "v1 lag, append -> counter v1 and summary committed, ms: p50 / p95 / p99 / max (target p99 <= 100)",
        lat((r) => r.lag)
      ),
      row(
        "v1 lag as above, appends after the worker process's first second (its cold start), ms: p50 / p95 / p99 / max",
        lat((r) => r.lagAfterFirstSecond)
      ),
      row(
        "v1 lag, append -> counter v1 committed, ms: p50 / p95 / p99 / max",
        lat((r) => r.lagCounterV1)
      ),
      row(
        "autovacuum ANALYZE runs of the work table during the rebuild; first one, s after registration (sampled every s)",
        (s) => `${s((r) => r.autoAnalyzes)}; ${s((r) => r.firstAutoAnalyzeS, 0)}`
      ),
      row("worker process CPU, ms per 1,000 history events (ready -> end, live work included)", (s) => s((r) => r.workerCpuMsPer1000, 1)),
      row("worker process RSS ready / peak, MB", (s) => `${s((r) => r.readyRssMb)} / ${s((r) => r.peakRssMb)}`),
      row("kill -9: history streams still planned at the kill / after the killed process exited", (s, runs) =>
        runs.every((r) => r.kill !== undefined) ? `${s((r) => r.kill!.plannedAtKill)} / ${s((r) => r.kill!.plannedAfterExit)}` : "-"
      ),
      row(
        "kill -9 -> new worker process ready, ms",
        killed((k) => k.readyMs)
      ),
      row(
        "kill -9 -> replay resumed (the new process's first chunk committed), ms",
        killed((k) => k.resumedMs)
      ),
      row(
        "kill -9: history streams replayed by the new process (the rest were not replayed again)",
        killed((k) => k.replayedAfter)
      ),
      row(
        "kill -9: live appends whose commits died unreported with the killed process (left out of the lag; in the folds)",
        killed((k) => k.unreported)
      ),
      row("v2, served view, counter v1, summary = folds of all events (0 events applied twice)", (_s, runs) =>
        runs.every((r) => r.problems.length === 0) ? "yes" : "NO"
      )
    ],
    notes: [
      `v1 lag (both models) at ${Stats.fmt(profile.rebuild.appendRates[0]!)} appends/s by tenth of the time from the first live append to v2 live, p50 / max in ms (median of the runs): ${Array.from(
        { length: 10 },
        (_, k) =>
          `${Stats.fmt(Stats.median(first.map((r) => r.lagByTenth[k]!.p50)))} / ${Stats.fmt(Stats.median(first.map((r) => r.lagByTenth[k]!.max)))}`
      ).join(", ")}`,
      "rebuild time: registry times (database clock): registered_at of v2 (its registration transaction) -> state_changed_at when it became live (the switch's transaction); caught up = live minus the cutover's own time",
      `cutover: the worker's (or the builder's) log line "reads now served by ${v2} ... after N ms" (PgPerspectiveVersions.cutover: from marking v2 ready, through waiting for the events pending then, to the switch's commit)`,
      "baseline: a fresh database with the same events; one statement writes a counter__v2 work row per event (+ ANALYZE), then one loop of the set-based baseline drains them; no live appends and no v1 to keep current there; one baseline per repetition, shared by its columns",
      "v1 lag: appends committed before v2 went live; append completion in the bench process -> the worker's post-commit hook for both v1 read models, reported over IPC with its own time (performance.timeOrigin + performance.now() on both sides); the appends start when the worker process is ready, so its first second (cold code, first plans) is in the figure, and also given apart; before the worker starts, the loaded history is checkpointed (CHECKPOINT), so the OS does not write it back during the measured window",
      profile.rebuild.analyzeEveryMs === undefined
        ? "no ANALYZE during the rebuild: the work table's statistics are what autovacuum makes of them (the table was analyzed while empty, as in a quiet deployment)"
        : `--rebuild-analyze-ms ${profile.rebuild.analyzeEveryMs}: the bench ran ANALYZE on the work table every ${profile.rebuild.analyzeEveryMs} ms during the rebuild (diagnosis: not what a deployment does by itself)`,
      `worker options: ${JSON.stringify(tunedOptions)}; version options: the defaults (history replayed by PgHistoryReplay on a connection of its own: chunks of about 5,000 events, one at a time, pausing at most as long as its last chunk while the oldest pending live event is older than 50 ms; automatic cutover at <= 1,000 pending); the worker process runs ${result.runs[0]?.workerRuns ?? "-"}`,
      ...(profile.rebuild.builder
        ? [
            "--rebuild-builder: the history replayed by a builder process of its own (PgPerspectivePipeline.layerBuild, as Whizbang.layerBuilder; the same machine) while the worker process's replay is off; the worker CPU per 1,000 events leaves the builder's out"
          ]
        : []),
      "kill -9 run: once the share of v2's history streams named in its column was replayed (plan rows deleted), the worker process got SIGKILL; a new one was started at once (as a supervisor restarts it); resumed = the planned streams fell below what the killed one left (its open chunk rolled back). Its rebuild rate and v1 lag include the dead time; CPU per 1,000 events is not given for it. 0 events applied twice: counter v2 sums every event's amount, so an event applied twice would show as a wrong fold (the check above)"
    ]
  }
}
