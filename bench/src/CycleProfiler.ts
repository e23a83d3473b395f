/**
 * `--profile-cycles`: where a worker's wall time goes. A tracer records the worker's spans (`whizbang.claim`,
 * `whizbang.fetch`, `whizbang.load`, `whizbang.apply`, `whizbang.flush`, `whizbang.cycle`) with
 * their start and end, and the report gives, per Whizbang run: the wall time (first claim to last commit), each
 * span's calls and summed time per cycle, and how much of the wall time had no cycle in flight (the consumers
 * waiting on the drain batcher or on the claim) or no statement in flight at all. Only for profiling: it keeps every
 * span of a run in memory.
 */
import { readFileSync } from "node:fs"
import { Tracer } from "effect"
import type pg from "pg"

interface Interval {
  readonly name: string
  readonly start: number
  readonly end: number
}

let intervals: Array<Interval> = []

/** Set by `--profile-cycles`: the Whizbang runs install {@link tracer} and print {@link report}. */
export let enabled = false

export const install = () => {
  enabled = true
}

/** A tracer that records every span's interval (ms, `performance.now()`-like clock from the span times). */
export const tracer: Tracer.Tracer = Tracer.make({
  span(options) {
    const span = new Tracer.NativeSpan(options)
    const end = span.end.bind(span)
    span.end = (endTime, exit) => {
      if (options.name.startsWith("whizbang."))
        intervals.push({ name: options.name, start: Number(options.startTime) / 1e6, end: Number(endTime) / 1e6 })
      end(endTime, exit)
    }
    return span
  }
})

/** Starts a new run's record. */
export const reset = () => {
  intervals = []
}

/** Length of the union of intervals clipped to [from, to]. */
const covered = (items: ReadonlyArray<Interval>, from: number, to: number) => {
  const sorted = items
    .map((i) => ({ start: Math.max(from, i.start), end: Math.min(to, i.end) }))
    .filter((i) => i.end > i.start)
    .sort((a, b) => a.start - b.start)
  let total = 0
  let open = Number.NEGATIVE_INFINITY
  let close = Number.NEGATIVE_INFINITY
  for (const i of sorted) {
    if (i.start > close) {
      if (close > open) total += close - open
      open = i.start
      close = i.end
    } else close = Math.max(close, i.end)
  }
  if (close > open) total += close - open
  return total
}

const statements = new Set(["whizbang.claim", "whizbang.fetch", "whizbang.load", "whizbang.flush"])

/** The report of the run recorded since `reset`, for the wall-time window [from, to] (`performance.now()` ms). */
export const report = (system: string, from: number, to: number): string => {
  // Span times are epoch-based nanoseconds; the window is performance.now(): shift by the time origin.
  const origin = performance.timeOrigin
  const mine = intervals.map((i) => ({ ...i, start: i.start - origin, end: i.end - origin })).filter((i) => i.end > from && i.start < to)
  const wall = to - from
  const cycles = mine.filter((i) => i.name === "whizbang.cycle").length
  const names = [...new Set(mine.map((i) => i.name))].sort()
  const lines = names.map((name) => {
    const own = mine.filter((i) => i.name === name)
    const sum = own.reduce((n, i) => n + (i.end - i.start), 0)
    return `  ${name.padEnd(18)} ${String(own.length).padStart(6)} calls ${sum.toFixed(0).padStart(7)} ms summed (${(sum / Math.max(1, cycles)).toFixed(1).padStart(6)} ms/cycle, ${(sum / Math.max(1, own.length)).toFixed(1).padStart(6)} ms/call), in flight ${((100 * covered(own, from, to)) / wall).toFixed(0).padStart(3)}% of wall`
  })
  const noCycle =
    wall -
    covered(
      mine.filter((i) => i.name === "whizbang.cycle"),
      from,
      to
    )
  const noStatement =
    wall -
    covered(
      mine.filter((i) => statements.has(i.name)),
      from,
      to
    )
  return [
    `${system}: wall ${wall.toFixed(0)} ms, ${cycles} cycles (${(wall / Math.max(1, cycles)).toFixed(1)} ms of wall per cycle)`,
    ...lines,
    `  no cycle in flight (waiting on the batcher/claim): ${noCycle.toFixed(0)} ms (${((100 * noCycle) / wall).toFixed(0)}%)`,
    `  no statement in flight (claim, fetch, load, flush): ${noStatement.toFixed(0)} ms (${((100 * noStatement) / wall).toFixed(0)}%)`
  ].join("\n")
}

/** CPU time so far: this process's, and each PostgreSQL backend's serving the pool's database (from `/proc`). */
export interface CpuSnapshot {
  readonly processMs: number
  readonly backendsMs: ReadonlyMap<number, number>
}

const ticksMs = 10 // USER_HZ is 100 on Linux

const backendMs = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // After the name: state is field 3, so utime (14) and stime (15) are at offsets 11 and 12.
    return (Number(fields[11]) + Number(fields[12])) * ticksMs
  } catch {
    return undefined
  }
}

/** A CPU snapshot; backends are those of `db`'s database (PostgreSQL must run on this machine to be counted). */
export const cpuSnapshot = async (db: pg.Pool): Promise<CpuSnapshot> => {
  const pids = (await db.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")).rows
  const backendsMs = new Map<number, number>()
  for (const { pid } of pids) {
    const ms = backendMs(pid)
    if (ms !== undefined) backendsMs.set(pid, ms)
  }
  const usage = process.cpuUsage()
  return { processMs: (usage.user + usage.system) / 1000, backendsMs }
}

/** CPU spent between two snapshots: this process, and the database's backends (new ones counted from zero). */
export const cpuBetween = (before: CpuSnapshot, after: CpuSnapshot) => {
  let postgresMs = 0
  for (const [pid, ms] of after.backendsMs) postgresMs += ms - (before.backendsMs.get(pid) ?? 0)
  return { nodeMs: after.processMs - before.processMs, postgresMs }
}

/** One line: CPU ms per 1,000 events, Node and PostgreSQL. */
export const cpuLine = (system: string, events: number, cpu: { nodeMs: number; postgresMs: number }, wallMs: number) =>
  `${system}: CPU per 1,000 events: node ${((1000 * cpu.nodeMs) / events).toFixed(1)} ms, postgres ${((1000 * cpu.postgresMs) / events).toFixed(1)} ms` +
  ` (over the run: node ${((100 * cpu.nodeMs) / wallMs).toFixed(0)}% of a core, postgres ${((100 * cpu.postgresMs) / wallMs).toFixed(0)}%)`
