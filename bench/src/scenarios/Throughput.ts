/**
 * Scenario a (+ e, f): the same events over the same streams, two read models, processed by Whizbang with 1..3
 * instances, by the set-based SQL baseline with 1..2 loops, and by the peers — each in a fresh database, every
 * repetition interleaving the systems. Events/s from the first claim (first job start) to the last commit.
 */
import * as CycleProfiler from "../CycleProfiler.js"
import * as Domain from "../Domain.js"
import type { Profile } from "../Profile.js"
import * as PG from "../Postgres.js"
import * as Stats from "../Stats.js"
import * as Baseline from "../systems/Baseline.js"
import * as Emmett from "../systems/Emmett.js"
import * as GraphileWorker from "../systems/GraphileWorker.js"
import * as PgBoss from "../systems/PgBoss.js"
import * as ReadModels from "../systems/ReadModels.js"
import * as Whizbang from "../systems/Whizbang.js"
import * as WorkerProcess from "../WorkerProcess.js"
import type { Table } from "../Table.js"

export interface Run {
  readonly system: string
  readonly events: number
  readonly streams: number
  readonly seconds: number
  readonly eventsPerSecond: number
  readonly problems: ReadonlyArray<string>
}

export interface Result {
  readonly runs: ReadonlyArray<Run>
  readonly summary: ReadonlyArray<{
    readonly system: string
    readonly events: number
    readonly eventsPerSecond: Stats.Spread
    readonly consistent: boolean
    readonly failure: string | undefined
  }>
}

const measured = (system: string, events: number, streams: number, start: number, end: number, problems: ReadonlyArray<string>): Run => {
  const seconds = (end - start) / 1000
  return { system, events, streams, seconds, eventsPerSecond: events / seconds, problems }
}

/** The latency-tuned drain batcher (see Latency.optionSets); with it the throughput run shows what the defaults cost. */
// Strings, not Durations: the options travel to worker processes as JSON.
export const tunedOptions = { drainBatcher: { slidingWindow: "1 millis", maxWait: "5 millis", maxSize: 300 } } as const

/**
 * Whizbang xN with each instance in its own process (`WorkerProcess`): started together once the data is loaded;
 * events/s from the first instance's first claim to the last commit of any, as reported by the instances.
 */
const whizbangProcesses = (
  serverUrl: string,
  instances: number,
  events: number,
  streams: number,
  log: (s: string) => void,
  tuned: boolean
) =>
  PG.withFreshDatabase(serverUrl, "wb", async (url) => {
    const db = PG.pool(url)
    await Whizbang.migrate(url)
    const workers: Array<WorkerProcess.Worker> = []
    try {
      await Whizbang.load(db, 0, events, streams)
      for (let k = 0; k < instances; k++) workers.push(await WorkerProcess.start(url, tuned ? tunedOptions : {}, 0, true))
      const cpuBefore = await CycleProfiler.cpuSnapshot(db)
      for (const w of workers) WorkerProcess.go(w)
      const target = events * 2
      await WorkerProcess.until(workers, () => workers.reduce((n, w) => n + w.progress.applied, 0) >= target, 30_000, `of ${target} pairs`)
      const settled = await Promise.all(workers.map(WorkerProcess.settle))
      const cpuAfter = await CycleProfiler.cpuSnapshot(db)
      if (settled.some((s) => s === undefined)) throw new Error("a worker process did not report its end")
      const all = settled.map((s) => s!)
      const firstClaim = Math.min(...all.filter((s) => s.started > 0).map((s) => s.started))
      const lastCommit = Math.max(...all.map((s) => s.lastCommit))
      const problems = Domain.verify(Domain.expected(events, streams), await Whizbang.readModels(db))
      const left = await Whizbang.pendingWork(db)
      if (left > 0) problems.push(`${left} work rows left`)
      const run = measured(`whizbang x${instances}${tuned ? " tuned" : ""}`, events, streams, firstClaim, lastCommit, problems)
      log(`${run.system}: ${Stats.fmt(run.eventsPerSecond)} events/s (${instances} worker process${instances > 1 ? "es" : ""})`)
      if (CycleProfiler.enabled) {
        const nodeMs = all.reduce((n, s, k) => n + s.cpuMs - (workers[k]!.loaded?.cpuMs ?? 0), 0)
        const { postgresMs } = CycleProfiler.cpuBetween(cpuBefore, cpuAfter)
        log(CycleProfiler.cpuLine(`${run.system} (worker processes)`, events, { nodeMs, postgresMs }, lastCommit - firstClaim))
      }
      return run
    } finally {
      await Promise.all(workers.map(WorkerProcess.stop))
      await db.end()
    }
  })

export const whizbang = (
  serverUrl: string,
  instances: number,
  events: number,
  streams: number,
  log: (s: string) => void,
  tuned = false,
  processes = true
) =>
  processes
    ? whizbangProcesses(serverUrl, instances, events, streams, log, tuned)
    : whizbangInProcess(serverUrl, instances, events, streams, log, tuned)

const whizbangInProcess = (
  serverUrl: string,
  instances: number,
  events: number,
  streams: number,
  log: (s: string) => void,
  tuned: boolean
) =>
  PG.withFreshDatabase(serverUrl, "wb", async (url) => {
    const db = PG.pool(url)
    await Whizbang.migrate(url)
    try {
      await Whizbang.load(db, 0, events, streams)
      CycleProfiler.reset()
      const cpuBefore = await CycleProfiler.cpuSnapshot(db)
      let cpu = { nodeMs: 0, postgresMs: 0 }
      const o = await Whizbang.withInstances(url, { instances, ...(tuned ? { options: tunedOptions } : {}) }, async ({ observed }) => {
        await Whizbang.untilApplied(observed, events * 2, Math.max(120_000, events * 5))
        if (CycleProfiler.enabled) cpu = CycleProfiler.cpuBetween(cpuBefore, await CycleProfiler.cpuSnapshot(db))
        return { ...observed }
      })
      const problems = Domain.verify(Domain.expected(events, streams), await Whizbang.readModels(db))
      const left = await Whizbang.pendingWork(db)
      if (left > 0) problems.push(`${left} work rows left`)
      const run = measured(`whizbang x${instances}${tuned ? " tuned" : ""}`, events, streams, o.firstClaim, o.lastCommit, problems)
      log(`${run.system}: ${Stats.fmt(run.eventsPerSecond)} events/s`)
      if (CycleProfiler.enabled) {
        log(CycleProfiler.report(run.system, o.firstClaim, o.lastCommit))
        log(CycleProfiler.cpuLine(run.system, events, cpu, o.lastCommit - o.firstClaim))
      }
      return run
    } finally {
      await db.end()
    }
  })

export const baseline = (serverUrl: string, loops: number, events: number, streams: number, log: (s: string) => void) =>
  PG.withFreshDatabase(serverUrl, "bl", async (url) => {
    const db = PG.pool(url, loops + 2)
    await Whizbang.migrate(url)
    try {
      await Baseline.createModelTables(db)
      await Whizbang.load(db, 0, events, streams)
      const cpuBefore = await CycleProfiler.cpuSnapshot(db)
      const r = await Baseline.run(db, loops)
      const cpu = CycleProfiler.cpuBetween(cpuBefore, await CycleProfiler.cpuSnapshot(db))
      const problems = Domain.verify(Domain.expected(events, streams), await Whizbang.readModels(db))
      const run = measured(`baseline x${loops}`, events, streams, r.start, r.end, problems)
      log(`${run.system}: ${Stats.fmt(run.eventsPerSecond)} events/s`)
      if (CycleProfiler.enabled) log(CycleProfiler.cpuLine(run.system, events, cpu, r.end - r.start))
      return run
    } finally {
      await db.end()
    }
  })

export const peer = (
  serverUrl: string,
  name: Profile["throughput"]["peers"][number],
  events: number,
  streams: number,
  log: (s: string) => void
) =>
  PG.withFreshDatabase(serverUrl, name.replace("-", ""), async (url) => {
    const db = PG.pool(url, 12)
    try {
      let r: { start: number; end: number }
      let models: Parameters<typeof Domain.verify>[1]
      if (name === "graphile-worker") {
        await GraphileWorker.setup(url, db)
        await GraphileWorker.load(db, 0, events, streams)
        r = await GraphileWorker.process(url, db, events)
        models = await ReadModels.read(db)
      } else if (name === "pg-boss") {
        await PgBoss.setup(url, db)
        await PgBoss.load(db, 0, events, streams)
        r = await PgBoss.process(url, db, events)
        models = await ReadModels.read(db)
      } else {
        await Emmett.load(url, 0, events, streams)
        r = await Emmett.process(url)
        models = await Emmett.read(db)
      }
      const run = measured(name, events, streams, r.start, r.end, Domain.verify(Domain.expected(events, streams), models))
      log(`${run.system}: ${Stats.fmt(run.eventsPerSecond)} events/s`)
      return run
    } finally {
      await db.end()
    }
  })

/** A system that fails is reported (failed, with the reason) and the others still run. */
const attempt = async (
  system: string,
  events: number,
  streams: number,
  log: (s: string) => void,
  body: () => Promise<Run>
): Promise<Run> => {
  try {
    return await body()
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    log(`${system} FAILED: ${reason}`)
    return { system, events, streams, seconds: Number.NaN, eventsPerSecond: Number.NaN, problems: [`failed: ${reason}`] }
  }
}

export const run = async (serverUrl: string, profile: Profile, log: (s: string) => void): Promise<Result> => {
  const { baselineLoops, events, instances, peerEvents, peers, streams } = profile.throughput
  const peerStreams = Math.max(1, Math.round((streams * peerEvents) / events))
  const runs: Array<Run> = []
  for (let rep = 1; rep <= profile.repetitions; rep++) {
    log(`throughput repetition ${rep}/${profile.repetitions}`)
    for (const loops of baselineLoops)
      runs.push(await attempt(`baseline x${loops}`, events, streams, log, () => baseline(serverUrl, loops, events, streams, log)))
    const processes = profile.throughput.workerProcesses
    for (const n of instances)
      runs.push(await attempt(`whizbang x${n}`, events, streams, log, () => whizbang(serverUrl, n, events, streams, log, false, processes)))
    runs.push(await attempt("whizbang x1 tuned", events, streams, log, () => whizbang(serverUrl, 1, events, streams, log, true, processes)))
    for (const p of peers) runs.push(await attempt(p, peerEvents, peerStreams, log, () => peer(serverUrl, p, peerEvents, peerStreams, log)))
  }
  const systems = [...new Set(runs.map((r) => r.system))]
  const summary = systems.map((system) => {
    const all = runs.filter((r) => r.system === system)
    const ok = all.filter((r) => !r.problems.some((p) => p.startsWith("failed: ")))
    const mine = ok.length > 0 ? ok : all
    return {
      failure: all.find((r) => r.problems.some((p) => p.startsWith("failed: ")))?.problems[0],
      system,
      events: mine[0]!.events,
      eventsPerSecond: Stats.spread(mine.map((r) => r.eventsPerSecond)),
      consistent: mine.every((r) => r.problems.length === 0)
    }
  })
  return { runs, summary }
}

export const table = (result: Result, profile: Profile): Table => {
  const rate = (system: string) => result.summary.find((s) => s.system === system)?.eventsPerSecond.median ?? Number.NaN
  const base = rate("baseline x1")
  const wb = rate("whizbang x1")
  return {
    title: `a/e/f. Throughput: events/s, first claim to last commit (2 read models; median (min–max) of ${profile.repetitions})`,
    head: ["system", "events", "events/s", "vs baseline x1", "whizbang x1 vs it", "read models = folds"],
    rows: result.summary.map((s) => [
      s.system,
      Stats.fmt(s.events),
      Stats.fmtSpread(s.eventsPerSecond),
      Stats.ratio(s.eventsPerSecond.median, base),
      s.system === "whizbang x1" ? "-" : Stats.ratio(wb, s.eventsPerSecond.median),
      s.failure !== undefined ? s.failure.slice(0, 80) : s.consistent ? "yes" : "NO"
    ]),
    notes: [
      `${profile.throughput.events.toLocaleString("en-US")} events over ${profile.throughput.streams.toLocaleString("en-US")} streams` +
        (profile.throughput.peerEvents < profile.throughput.events
          ? `; peers: the first ${profile.throughput.peerEvents.toLocaleString("en-US")} events' shape (same events per stream) to bound run time`
          : "; peers on the same data"),
      profile.throughput.workerProcesses
        ? "whizbang xN: N worker instances, each in its own Node process (its own pool and instance id), started together once the data is loaded, default WorkerOptions; baseline xN: N hand-written SQL loops in the bench process"
        : "whizbang xN: N worker instances (separate pools and instance ids) in the bench process (--in-process), default WorkerOptions; baseline xN: N hand-written SQL loops",
      `whizbang x1 tuned: ${JSON.stringify(tunedOptions)}`
    ]
  }
}
