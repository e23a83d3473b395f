/**
 * Scenario d: does the cost grow with the size of the tables? One instance processes the first tenth of the data
 * (T at 1/10 stored), then the remaining nine tenths are loaded and processed; the throughput of that step's last
 * tenth (T at full size stored, measured from the hooks' running count) is compared with the first. The process's
 * RSS is sampled every 100 ms.
 */
import * as Domain from "../Domain.js"
import type { Profile } from "../Profile.js"
import * as PG from "../Postgres.js"
import * as Stats from "../Stats.js"
import * as Whizbang from "../systems/Whizbang.js"
import type { Table } from "../Table.js"
import { tunedOptions } from "./Throughput.js"

export interface Run {
  readonly smallStored: number
  readonly fullStored: number
  readonly atSmall: number
  readonly atFull: number
  readonly fullStepOverall: number
  readonly startRssMb: number
  readonly peakRssMb: number
  readonly problems: ReadonlyArray<string>
}

export const once = (serverUrl: string, events: number, streams: number, log: (s: string) => void) =>
  PG.withFreshDatabase(serverUrl, "scale", async (url) => {
    const db = PG.pool(url)
    await Whizbang.migrate(url)
    const startRss = process.memoryUsage().rss
    let peak = startRss
    const sampler = setInterval(() => void (peak = Math.max(peak, process.memoryUsage().rss)), 100)
    try {
      const small = Math.floor(events / 10)
      await Whizbang.load(db, 0, small, streams)
      const first = await Whizbang.withInstances(url, { instances: 1, options: tunedOptions }, async ({ observed }) => {
        await Whizbang.untilApplied(observed, small * 2, Math.max(120_000, small * 5))
        return { ...observed }
      })
      const atSmall = small / ((first.lastCommit - first.firstClaim) / 1000)
      log(`scale: ${Stats.fmt(atSmall)} events/s with ${Stats.fmt(small)} stored; loading ${Stats.fmt(events)}`)
      await Whizbang.load(db, small, events, streams)
      const rest = events - small
      // The last `small` events of the step: from when the running count passed (rest - small) to the end.
      let crossed = 0
      const second = await Whizbang.withInstances(
        url,
        {
          instances: 1,
          options: tunedOptions
        },
        async ({ observed }) => {
          const watch = setInterval(() => {
            if (crossed === 0 && observed.applied >= (rest - small) * 2) crossed = performance.now()
          }, 5)
          try {
            await Whizbang.untilApplied(observed, rest * 2, Math.max(300_000, rest * 5))
          } finally {
            clearInterval(watch)
          }
          return { ...observed }
        }
      )
      // At small sizes the last tenth can land in one commit, between two 5 ms samples: then the whole step is the
      // measure (it is a lower bound: it includes the step's start-up).
      const atFull =
        crossed > 0 && second.lastCommit > crossed
          ? small / ((second.lastCommit - crossed) / 1000)
          : rest / ((second.lastCommit - second.firstClaim) / 1000)
      const problems = Domain.verify(Domain.expected(events, streams), await Whizbang.readModels(db))
      return {
        smallStored: small,
        fullStored: events,
        atSmall,
        atFull,
        fullStepOverall: rest / ((second.lastCommit - second.firstClaim) / 1000),
        startRssMb: startRss / 2 ** 20,
        peakRssMb: peak / 2 ** 20,
        problems
      } satisfies Run
    } finally {
      clearInterval(sampler)
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
      `scale (rep ${rep}): ${Stats.fmt(r.atSmall)} events/s at ${Stats.fmt(r.smallStored)} stored, ${Stats.fmt(r.atFull)} at ${Stats.fmt(r.fullStored)}; peak RSS ${Stats.fmt(r.peakRssMb)} MB`
    )
    runs.push(r)
  }
  return { runs }
}

export const table = (result: Result, profile: Profile): Table => {
  const s = (f: (r: Run) => number) => Stats.spread(result.runs.map(f))
  const atSmall = s((r) => r.atSmall)
  const atFull = s((r) => r.atFull)
  return {
    title: `d. Scale: ${Stats.fmt(profile.scale.events)} events over ${Stats.fmt(profile.scale.streams)} streams (one instance; median (min–max) of ${profile.repetitions})`,
    head: ["measure", "value"],
    rows: [
      [`events/s, ${Stats.fmt(profile.scale.events / 10)} stored (all pending)`, Stats.fmtSpread(atSmall)],
      [`events/s, last ${Stats.fmt(profile.scale.events / 10)} with ${Stats.fmt(profile.scale.events)} stored`, Stats.fmtSpread(atFull)],
      ["ratio (full / small)", Stats.ratio(atFull.median, atSmall.median)],
      [`events/s over the whole ${Stats.fmt(profile.scale.events * 0.9)}-event step`, Stats.fmtSpread(s((r) => r.fullStepOverall))],
      ["RSS of the bench process at the scenario's start, MB", Stats.fmtSpread(s((r) => r.startRssMb))],
      ["peak RSS of the bench process during the scenario, MB", Stats.fmtSpread(s((r) => r.peakRssMb))],
      ["read models = folds", result.runs.every((r) => r.problems.length === 0) ? "yes" : "NO"]
    ],
    notes: [
      "RSS is the whole bench process (worker, loader, earlier scenarios' heap and the expected folds), an upper bound of the worker's",
      `worker options: ${JSON.stringify(tunedOptions)} (with the defaults the fixed drain-batcher waits dominate small steps)`
    ]
  }
}
