/**
 * Scenario d: does the cost per event grow with the data stored, and does the worker's memory? The worker runs
 * alone in a child process (`src/WorkerProcess.ts`), so its RSS is the worker's only (no loader, no expected folds).
 * The data is loaded in ten equal tenths; each tenth is loaded (set-based, as in scenario a) only after the worker
 * committed the previous one, so every tenth starts from the same backlog while the stored events, models and
 * cursors grow from a tenth to all of them. Per tenth: wall time from its work rows' commit to the worker's last
 * commit of it, and the worker process's CPU; the last tenth's cost per event is compared with the first's. The
 * worker reports `process.memoryUsage()` every 100 ms over IPC.
 */
import * as Domain from "../Domain.js"
import type { Profile } from "../Profile.js"
import * as PG from "../Postgres.js"
import * as Stats from "../Stats.js"
import * as Whizbang from "../systems/Whizbang.js"
import * as WorkerProcess from "../WorkerProcess.js"
import type { Table } from "../Table.js"
import { tunedOptions } from "./Throughput.js"

export interface Tenth {
  /** Events stored once this tenth is loaded. */
  readonly stored: number
  readonly events: number
  /** Wall time from the tenth's work rows' commit to the worker's last commit of it. */
  readonly ms: number
  readonly msPer1000: number
  readonly eventsPerSecond: number
  /** The worker process's CPU time over the tenth, per 1,000 events. */
  readonly workerCpuMsPer1000: number
  /** The worker process's highest RSS sample during the tenth, MB. */
  readonly peakRssMb: number
}

export interface Run {
  readonly events: number
  readonly streams: number
  readonly tenths: ReadonlyArray<Tenth>
  /** Last tenth's wall time per event over the first's. */
  readonly costRatio: number
  readonly readyRssMb: number
  readonly peakRssMb: number
  /** Peaks over the run: heap used, the heap V8 held, and memory outside the heap (buffers). */
  readonly peakHeapMb: number
  readonly peakHeapTotalMb: number
  readonly peakExternalMb: number
  readonly endRssMb: number
  readonly endHeapMb: number
  /** After a full GC at the end: what the worker still holds. */
  readonly settledRssMb: number
  readonly settledHeapMb: number
  /** How the worker process ran (plain node, or through tsx). */
  readonly workerRuns: string
  /** The tables every completion rewrites (cursors, read models), from `pg_stat_user_tables` at the end. */
  readonly updates: Rewritten
  readonly problems: ReadonlyArray<string>
}

const mb = (bytes: number) => bytes / 2 ** 20

/** How the rows every completion rewrites were updated: in place (HOT) or not, and what the tables hold at the end. */
export interface Rewritten {
  readonly hotPercent: number
  /** Tables with their indexes and TOAST, MB. */
  readonly cursorsMb: number
  readonly modelsMb: number
}

/**
 * Call once the worker process has exited. Its backends report their last counters as they end, a moment after
 * its sockets close: wait (up to 5 s) until none of them is left.
 */
const rewrittenTables = async (db: ReturnType<typeof PG.pool>): Promise<Rewritten> => {
  const workerBackends = `SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = 'bench-worker-process'`
  for (let tries = 0; tries < 100 && (await db.query<{ n: number }>(workerBackends)).rows[0]!.n > 0; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const { rows } = await db.query<{ hot_percent: number | null; cursors: string; models: string }>(
    `SELECT 100.0 * sum(n_tup_hot_upd) / nullif(sum(n_tup_upd), 0) AS hot_percent,
            coalesce(sum(pg_total_relation_size(relid)) FILTER (WHERE relname = 'wh_perspective_cursors'), 0) AS cursors,
            coalesce(sum(pg_total_relation_size(relid)) FILTER (WHERE relname <> 'wh_perspective_cursors'), 0) AS models
       FROM pg_stat_user_tables WHERE relname = 'wh_perspective_cursors' OR relname LIKE 'wh\\_per\\_%\\_\\_v%'`
  )
  const row = rows[0]!
  return {
    hotPercent: row.hot_percent === null ? Number.NaN : Number(row.hot_percent),
    cursorsMb: mb(Number(row.cursors)),
    modelsMb: mb(Number(row.models))
  }
}

export const once = (serverUrl: string, events: number, streams: number, log: (s: string) => void) =>
  PG.withFreshDatabase(serverUrl, "scale", async (url) => {
    const db = PG.pool(url)
    await Whizbang.migrate(url)
    const tenth = Math.floor(events / 10)
    const total = tenth * 10
    // One step per tenth: its events x 2 perspectives.
    const entry = await WorkerProcess.entry()
    const worker = await WorkerProcess.start(url, tunedOptions, tenth * 2)
    try {
      const tenths: Array<Tenth> = []
      let cpuBefore = worker.ready!.cpuMs
      for (let k = 0; k < 10; k++) {
        const committed = await Whizbang.load(db, k * tenth, (k + 1) * tenth, streams)
        await WorkerProcess.until([worker], () => worker.steps.length >= k + 1, 60_000, `tenth ${k + 1} of 10`)
        const step = worker.steps[k]!
        const ms = step.at - committed
        const during = worker.memory.filter((m) => m.at >= committed && m.at <= step.at + 100)
        tenths.push({
          stored: (k + 1) * tenth,
          events: tenth,
          ms,
          msPer1000: (1000 * ms) / tenth,
          eventsPerSecond: tenth / (ms / 1000),
          workerCpuMsPer1000: (1000 * (step.cpuMs - cpuBefore)) / tenth,
          peakRssMb: mb(Math.max(0, ...during.map((m) => m.rss)))
        })
        cpuBefore = step.cpuMs
        const t = tenths.at(-1)!
        log(
          `scale: tenth ${k + 1}/10 (${Stats.fmt(t.stored)} stored): ${Stats.fmt(t.eventsPerSecond)} events/s, ${t.msPer1000.toFixed(1)} ms per 1,000 events, worker CPU ${t.workerCpuMsPer1000.toFixed(1)} ms per 1,000, worker RSS peak ${Stats.fmt(t.peakRssMb)} MB`
        )
      }
      const last = worker.memory.at(-1)!
      const settled = await WorkerProcess.settle(worker)
      const problems = Domain.verify(Domain.expected(total, streams), await Whizbang.readModels(db))
      await WorkerProcess.stop(worker)
      const updates = await rewrittenTables(db)
      return {
        events: total,
        streams,
        tenths,
        costRatio: tenths[9]!.msPer1000 / tenths[0]!.msPer1000,
        readyRssMb: mb(worker.ready!.rss),
        peakRssMb: mb(Math.max(...worker.memory.map((m) => m.rss))),
        peakHeapMb: mb(Math.max(...worker.memory.map((m) => m.heap))),
        peakHeapTotalMb: mb(Math.max(...worker.memory.map((m) => m.heapTotal ?? 0))),
        peakExternalMb: mb(Math.max(...worker.memory.map((m) => m.external ?? 0))),
        endRssMb: mb(last.rss),
        endHeapMb: mb(last.heap),
        settledRssMb: settled === undefined ? Number.NaN : mb(settled.rss),
        settledHeapMb: settled === undefined ? Number.NaN : mb(settled.heap),
        workerRuns: entry.how,
        updates,
        problems
      } satisfies Run
    } finally {
      await WorkerProcess.stop(worker)
      await db.end()
    }
  })

export interface Result {
  readonly runs: ReadonlyArray<Run>
}

export const run = async (serverUrl: string, profile: Profile, log: (s: string) => void): Promise<Result> => {
  const runs: Array<Run> = []
  for (let rep = 1; rep <= profile.repetitions; rep++) {
    const r = await once(serverUrl, profile.scale.events, profile.scale.streams, log)
    log(
      `scale (rep ${rep}): last tenth ${r.tenths[9]!.msPer1000.toFixed(1)} ms per 1,000 events vs first ${r.tenths[0]!.msPer1000.toFixed(1)} (${r.costRatio.toFixed(2)}x); worker RSS ${Stats.fmt(r.readyRssMb)} MB ready, peak ${Stats.fmt(r.peakRssMb)} MB`
    )
    runs.push(r)
  }
  return { runs }
}

export const table = (result: Result, profile: Profile): Table => {
  const s = (f: (r: Run) => number) => Stats.spread(result.runs.map(f))
  const first = (r: Run) => r.tenths[0]!
  const last = (r: Run) => r.tenths[9]!
  const tenth = Stats.fmt(profile.scale.events / 10)
  const byTenth = (f: (t: Tenth) => number, digits: number) =>
    Array.from({ length: 10 }, (_, k) => Stats.median(result.runs.map((r) => f(r.tenths[k]!))).toFixed(digits)).join(", ")
  return {
    title: `d. Scale: ${Stats.fmt(profile.scale.events)} events over ${Stats.fmt(profile.scale.streams)} streams, loaded and processed in tenths of ${tenth}; the worker alone in a child process (median (min–max) of ${profile.repetitions})`,
    head: ["measure", "value"],
    rows: [
      [
        `ms per 1,000 events, first tenth (${tenth} stored)`,
        Stats.fmtSpread(
          s((r) => first(r).msPer1000),
          1
        )
      ],
      [
        `ms per 1,000 events, last tenth (${Stats.fmt(profile.scale.events)} stored)`,
        Stats.fmtSpread(
          s((r) => last(r).msPer1000),
          1
        )
      ],
      [
        "cost per event, last tenth / first tenth",
        Stats.fmtSpread(
          s((r) => r.costRatio),
          2
        )
      ],
      ["events/s, first tenth", Stats.fmtSpread(s((r) => first(r).eventsPerSecond))],
      ["events/s, last tenth", Stats.fmtSpread(s((r) => last(r).eventsPerSecond))],
      [
        "worker process CPU, ms per 1,000 events, first tenth",
        Stats.fmtSpread(
          s((r) => first(r).workerCpuMsPer1000),
          1
        )
      ],
      [
        "worker process CPU, ms per 1,000 events, last tenth",
        Stats.fmtSpread(
          s((r) => last(r).workerCpuMsPer1000),
          1
        )
      ],
      ["worker process RSS when ready (before any work), MB", Stats.fmtSpread(s((r) => r.readyRssMb))],
      ["worker process RSS, peak over the run, MB", Stats.fmtSpread(s((r) => r.peakRssMb))],
      [
        "worker process heap used / heap held / external, peaks over the run, MB",
        `${Stats.fmtSpread(s((r) => r.peakHeapMb))} / ${Stats.fmtSpread(s((r) => r.peakHeapTotalMb))} / ${Stats.fmtSpread(s((r) => r.peakExternalMb))}`
      ],
      ["worker process RSS at the end, MB", Stats.fmtSpread(s((r) => r.endRssMb))],
      ["worker process heap used at the end, MB", Stats.fmtSpread(s((r) => r.endHeapMb))],
      ["worker process after a full GC at the end: RSS, MB", Stats.fmtSpread(s((r) => r.settledRssMb))],
      ["worker process after a full GC at the end: heap used, MB", Stats.fmtSpread(s((r) => r.settledHeapMb))],
      ["cursor and read-model updates in place (HOT), %", Stats.fmtSpread(s((r) => r.updates.hotPercent))],
      [
        "cursors / read-model tables at the end, with indexes, MB",
        `${Stats.fmtSpread(s((r) => r.updates.cursorsMb))} / ${Stats.fmtSpread(s((r) => r.updates.modelsMb))}`
      ],
      ["read models = folds", result.runs.every((r) => r.problems.length === 0) ? "yes" : "NO"]
    ],
    notes: [
      `ms per 1,000 events by tenth (median): ${byTenth((t) => t.msPer1000, 1)}`,
      `worker RSS peak by tenth, MB (median): ${byTenth((t) => t.peakRssMb, 0)}`,
      "a tenth's time runs from its work rows' commit (the loader's) to the worker's last commit of it; the next tenth is loaded after; at small sizes the first tenth includes the worker's warm-up (JIT)",
      `worker options: ${JSON.stringify(tunedOptions)} (with the defaults the fixed drain-batcher waits dominate small steps); the worker process runs ${result.runs[0]?.workerRuns ?? "-"}`
    ]
  }
}
