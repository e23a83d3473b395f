/**
 * Scenario d: does the cost per event grow with the data stored, and does the worker's memory? The worker runs
 * alone in a child process (`src/scaleWorker.ts`), so its RSS is the worker's only (no loader, no expected folds).
 * The data is loaded in ten equal tenths; each tenth is loaded (set-based, as in scenario a) only after the worker
 * committed the previous one, so every tenth starts from the same backlog while the stored events, models and
 * cursors grow from a tenth to all of them. Per tenth: wall time from its work rows' commit to the worker's last
 * commit of it, and the worker process's CPU; the last tenth's cost per event is compared with the first's. The
 * worker reports `process.memoryUsage()` every 100 ms over IPC.
 */
import { type ChildProcess, fork } from "node:child_process"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import * as Domain from "../Domain.js"
import type { Profile } from "../Profile.js"
import * as PG from "../Postgres.js"
import * as Stats from "../Stats.js"
import * as Whizbang from "../systems/Whizbang.js"
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
  readonly endRssMb: number
  readonly endHeapMb: number
  /** After a full GC at the end: what the worker still holds. */
  readonly settledRssMb: number
  readonly settledHeapMb: number
  /** How the worker process ran (plain node, or through tsx). */
  readonly workerRuns: string
  readonly problems: ReadonlyArray<string>
}

const workerSource = fileURLToPath(new URL("../scaleWorker.ts", import.meta.url))
const workerBundle = fileURLToPath(new URL("../../.scale-worker/scaleWorker.mjs", import.meta.url))

/**
 * The worker as plain JavaScript, so its process carries no TypeScript loader (tsx's loader thread alone adds about
 * 80 MB of RSS): `src/scaleWorker.ts` and the bench domain bundled by esbuild (tsx's own, so no new dependency),
 * packages left to `node_modules`. Falls back to running the source through tsx if esbuild cannot be loaded.
 */
const workerEntry = async (): Promise<{ readonly script: string; readonly execArgv: ReadonlyArray<string>; readonly how: string }> => {
  try {
    const require = createRequire(import.meta.url)
    const esbuild = createRequire(require.resolve("tsx"))("esbuild") as {
      build: (options: object) => Promise<unknown>
    }
    await esbuild.build({
      entryPoints: [workerSource],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      outfile: workerBundle,
      logLevel: "error"
    })
    return { script: workerBundle, execArgv: [], how: "plain node (bundled with esbuild)" }
  } catch (error) {
    return { script: workerSource, execArgv: ["--import", "tsx"], how: `through tsx (bundling failed: ${String(error)})` }
  }
}
const mb = (bytes: number) => bytes / 2 ** 20

type Message =
  | {
      readonly kind: "ready" | "memory" | "settled"
      readonly at: number
      readonly rss: number
      readonly heap: number
      readonly applied: number
      readonly cpuMs?: number
    }
  | { readonly kind: "step"; readonly at: number; readonly applied: number; readonly cpuMs: number }

/** The worker process and what it reported so far. */
interface Worker {
  readonly child: ChildProcess
  readonly memory: Array<{ readonly at: number; readonly rss: number; readonly heap: number }>
  readonly steps: Array<{ readonly at: number; readonly cpuMs: number }>
  readonly ready: { at: number; rss: number; cpuMs: number } | undefined
  /** The last time the count of committed pairs grew. */
  progress: { applied: number; at: number }
  /** Memory after a full GC at the end of the run. */
  readonly settled: { rss: number; heap: number } | undefined
  exited: string | undefined
}

const startWorker = (url: string, step: number, entry: Awaited<ReturnType<typeof workerEntry>>): Promise<Worker> =>
  new Promise((resolve, reject) => {
    const child = fork(entry.script, [url, Whizbang.schema, JSON.stringify(tunedOptions), String(step)], {
      // BENCH_WORKER_CPU_PROF=<dir>: the worker writes a CPU profile there when the run ends (profiling only).
      execArgv: [
        ...entry.execArgv,
        "--expose-gc",
        ...(process.env.BENCH_WORKER_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_WORKER_CPU_PROF}`] : [])
      ],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    const worker: { -readonly [K in keyof Worker]: Worker[K] } = {
      child,
      memory: [],
      steps: [],
      ready: undefined,
      settled: undefined,
      progress: { applied: 0, at: 0 },
      exited: undefined
    }
    child.on("message", (m: Message) => {
      if (m.kind === "step") worker.steps.push({ at: m.at, cpuMs: m.cpuMs })
      else if (m.kind === "settled") worker.settled = { rss: m.rss, heap: m.heap }
      else {
        if (m.applied > worker.progress.applied) worker.progress = { applied: m.applied, at: m.at }
        worker.memory.push({ at: m.at, rss: m.rss, heap: m.heap })
        if (m.kind === "ready") {
          worker.ready = { at: m.at, rss: m.rss, cpuMs: m.cpuMs ?? 0 }
          resolve(worker)
        }
      }
    })
    child.on("exit", (code, signal) => {
      worker.exited = `scale worker exited (${code ?? signal})`
      reject(new Error(worker.exited))
    })
  })

/** Resolves once the worker reported `count` steps; fails when it exits or commits nothing for `stallMs`. */
const untilSteps = (worker: Worker, count: number, stallMs: number) =>
  new Promise<void>((resolve, reject) => {
    const started = Date.now()
    const tick = () => {
      if (worker.steps.length >= count) return resolve()
      if (worker.exited !== undefined) return reject(new Error(worker.exited))
      if (Date.now() - Math.max(started, worker.progress.at) > stallMs)
        return reject(
          new Error(`scale worker stalled: nothing committed for ${stallMs} ms, ${worker.steps.length} of ${count} tenths done`)
        )
      setTimeout(tick, 5)
    }
    tick()
  })

/** Resolves once the worker answered `settle` (or after 10 s: the figure is then missing). */
const untilSettled = (worker: Worker) =>
  new Promise<void>((resolve) => {
    const started = Date.now()
    const tick = () => (worker.settled !== undefined || Date.now() - started > 10_000 ? resolve() : setTimeout(tick, 5))
    tick()
  })

export const once = (serverUrl: string, events: number, streams: number, log: (s: string) => void) =>
  PG.withFreshDatabase(serverUrl, "scale", async (url) => {
    const db = PG.pool(url)
    await Whizbang.migrate(url)
    const tenth = Math.floor(events / 10)
    const total = tenth * 10
    // One step per tenth: its events x 2 perspectives.
    const entry = await workerEntry()
    const worker = await startWorker(url, tenth * 2, entry)
    try {
      const tenths: Array<Tenth> = []
      let cpuBefore = worker.ready!.cpuMs
      for (let k = 0; k < 10; k++) {
        const committed = await Whizbang.load(db, k * tenth, (k + 1) * tenth, streams)
        await untilSteps(worker, k + 1, 60_000)
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
      worker.child.send({ kind: "settle" })
      await untilSettled(worker)
      const problems = Domain.verify(Domain.expected(total, streams), await Whizbang.readModels(db))
      return {
        events: total,
        streams,
        tenths,
        costRatio: tenths[9]!.msPer1000 / tenths[0]!.msPer1000,
        readyRssMb: mb(worker.ready!.rss),
        peakRssMb: mb(Math.max(...worker.memory.map((m) => m.rss))),
        endRssMb: mb(last.rss),
        endHeapMb: mb(last.heap),
        settledRssMb: worker.settled === undefined ? Number.NaN : mb(worker.settled.rss),
        settledHeapMb: worker.settled === undefined ? Number.NaN : mb(worker.settled.heap),
        workerRuns: entry.how,
        problems
      } satisfies Run
    } finally {
      // Disconnecting ends the worker (it exits on "disconnect"); it is killed if it has not after 5 s.
      const exited = new Promise<void>((resolve) => {
        if (worker.child.exitCode !== null || worker.child.signalCode !== null) resolve()
        else worker.child.once("exit", () => resolve())
      })
      if (worker.child.connected) worker.child.disconnect()
      const timer = setTimeout(() => worker.child.kill("SIGKILL"), 5_000)
      await exited
      clearTimeout(timer)
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
      ["worker process RSS at the end, MB", Stats.fmtSpread(s((r) => r.endRssMb))],
      ["worker process heap used at the end, MB", Stats.fmtSpread(s((r) => r.endHeapMb))],
      ["worker process after a full GC at the end: RSS, MB", Stats.fmtSpread(s((r) => r.settledRssMb))],
      ["worker process after a full GC at the end: heap used, MB", Stats.fmtSpread(s((r) => r.settledHeapMb))],
      ["read models = folds", result.runs.every((r) => r.problems.length === 0) ? "yes" : "NO"]
    ],
    notes: [
      `ms per 1,000 events by tenth (median): ${byTenth((t) => t.msPer1000, 1)}`,
      `worker RSS peak by tenth, MB (median): ${byTenth((t) => t.peakRssMb, 0)}`,
      "a tenth's time runs from its work rows' commit (the loader's) to the worker's last commit of it; the next tenth is loaded after",
      `worker options: ${JSON.stringify(tunedOptions)} (with the defaults the fixed drain-batcher waits dominate small steps); the worker process runs ${result.runs[0]?.workerRuns ?? "-"}`
    ]
  }
}
