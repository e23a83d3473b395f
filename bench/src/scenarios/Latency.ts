/**
 * Scenario b: a steady append rate (one event per append, round-robin over a pool of streams) for N seconds with
 * one worker instance in the same process; latency = append commit (the append's completion) -> both read models
 * committed (the worker's onPerspectiveEventProcessed hook, fired after the completion transaction commits).
 * Samples from the first 10% of the window are dropped (warm-up).
 */
import type { WorkerOptions } from "@whizbang/core"
import * as CycleProfiler from "../CycleProfiler.js"
import * as Domain from "../Domain.js"
import type { Profile } from "../Profile.js"
import * as PG from "../Postgres.js"
import * as Stats from "../Stats.js"
import * as Whizbang from "../systems/Whizbang.js"
import type { Table } from "../Table.js"
import { tunedOptions } from "./Throughput.js"

/** The documented defaults (WorkerOptions.defaults) and the latency-tuned options. */
export const optionSets: ReadonlyArray<{ readonly name: string; readonly options: WorkerOptions.WorkerOptionsInput }> = [
  { name: "default", options: {} },
  {
    name: "tuned",
    options: tunedOptions
  }
]

export interface Run {
  readonly options: string
  readonly rate: number
  readonly achievedRate: number
  readonly latency: Stats.Latency
  readonly problems: ReadonlyArray<string>
  /** With `--profile-cycles`: the worker's spans over the append window (see `CycleProfiler.report`). */
  readonly cycles?: string | undefined
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const once = (
  serverUrl: string,
  optionsName: string,
  options: WorkerOptions.WorkerOptionsInput,
  rate: number,
  seconds: number,
  streams: number
) =>
  PG.withFreshDatabase(serverUrl, "lat", async (url) => {
    const db = PG.pool(url)
    await Whizbang.migrate(url)
    const appendedAt = new Map<string, number>()
    const visible = new Map<string, { counter?: number; summary?: number }>()
    let sent = 0
    let failed = 0
    let inFlight = 0
    let window = { from: 0, to: 0 }
    try {
      const { elapsed } = await Whizbang.withInstances(
        url,
        {
          instances: 1,
          options,
          onProcessed: (perspective, ids, at) => {
            for (const id of ids) {
              const v = visible.get(id) ?? visible.set(id, {}).get(id)!
              v[perspective as "counter" | "summary"] = at
            }
          }
        },
        async ({ observed, store }) => {
          const start = performance.now()
          CycleProfiler.reset()
          const end = start + seconds * 1000
          while (performance.now() < end) {
            const due = Math.floor(((performance.now() - start) / 1000) * rate) - sent
            for (let j = 0; j < due && inFlight < 256; j++) {
              const k = sent++
              inFlight++
              const stream = Domain.streamId(k % streams)
              void Whizbang.appendOne(store, stream, Domain.amountOf(k), Math.floor(k / streams) + 1)
                .then(
                  (id) => void appendedAt.set(id, performance.now()),
                  () => void failed++
                )
                .finally(() => void inFlight--)
            }
            await sleep(1)
          }
          const elapsed = (performance.now() - start) / 1000
          window = { from: start, to: performance.now() }
          while (inFlight > 0) await sleep(1)
          await Whizbang.untilApplied(observed, sent * 2, 60_000)
          return { elapsed }
        }
      )
      const warm = seconds * 100 // ms: the first 10%
      const first = Math.min(...appendedAt.values())
      const samples: Array<number> = []
      for (const [id, at] of appendedAt) {
        if (at - first < warm) continue
        const v = visible.get(id)
        if (v?.counter !== undefined && v.summary !== undefined) samples.push(Math.max(v.counter, v.summary) - at)
      }
      const problems = Domain.verify(Domain.expected(sent, streams), await Whizbang.readModels(db))
      if (failed > 0) problems.push(`${failed} appends failed`)
      const cycles = CycleProfiler.enabled ? CycleProfiler.report(`whizbang ${optionsName} @${rate}/s`, window.from, window.to) : undefined
      return { options: optionsName, rate, achievedRate: sent / elapsed, latency: Stats.latency(samples), problems, cycles } satisfies Run
    } finally {
      await db.end()
    }
  })

export interface Result {
  readonly runs: ReadonlyArray<Run>
  readonly summary: ReadonlyArray<{
    readonly options: string
    readonly rate: number
    readonly achievedRate: number
    readonly p50: Stats.Spread
    readonly p95: Stats.Spread
    readonly p99: Stats.Spread
    readonly max: Stats.Spread
    readonly consistent: boolean
  }>
}

export const run = async (serverUrl: string, profile: Profile, log: (s: string) => void): Promise<Result> => {
  const runs: Array<Run> = []
  for (let rep = 1; rep <= profile.repetitions; rep++) {
    for (const set of optionSets) {
      for (const rate of profile.latency.rates) {
        const r = await once(serverUrl, set.name, set.options, rate, profile.latency.seconds, profile.latency.streams)
        log(
          `latency ${set.name} @${rate}/s (rep ${rep}): achieved ${Stats.fmt(r.achievedRate)}/s p50 ${Stats.fmt(r.latency.p50, 1)} ms p99 ${Stats.fmt(r.latency.p99, 1)} ms`
        )
        if (r.cycles !== undefined) log(r.cycles)
        runs.push(r)
      }
    }
  }
  const summary = optionSets.flatMap((set) =>
    profile.latency.rates.map((rate) => {
      const mine = runs.filter((r) => r.options === set.name && r.rate === rate)
      return {
        options: set.name,
        rate,
        achievedRate: Stats.median(mine.map((r) => r.achievedRate)),
        p50: Stats.spread(mine.map((r) => r.latency.p50)),
        p95: Stats.spread(mine.map((r) => r.latency.p95)),
        p99: Stats.spread(mine.map((r) => r.latency.p99)),
        max: Stats.spread(mine.map((r) => r.latency.max)),
        consistent: mine.every((r) => r.problems.length === 0)
      }
    })
  )
  return { runs, summary }
}

export const table = (result: Result, profile: Profile): Table => ({
  title: `b. Latency: append commit -> both read models committed, ms (one instance; ${profile.latency.seconds} s per rate; median (min–max) of ${profile.repetitions})`,
  head: ["options", "target/s", "achieved/s", "p50", "p95", "p99", "max", "read models = folds"],
  rows: result.summary.map((s) => [
    s.options,
    Stats.fmt(s.rate),
    Stats.fmt(s.achievedRate),
    Stats.fmtSpread(s.p50, 1),
    Stats.fmtSpread(s.p95, 1),
    Stats.fmtSpread(s.p99, 1),
    Stats.fmtSpread(s.max, 1),
    s.consistent ? "yes" : "NO"
  ]),
  notes: optionSets.map(
    (s) =>
      `${s.name}: ${JSON.stringify(s.options)}${s.name === "default" ? " (WorkerOptions.defaults: sliding window 300 ms, max wait 3000 ms)" : ""}`
  )
})
