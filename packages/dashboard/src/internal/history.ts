// The page's short memory: per perspective the applied events/s (counted from the `wh_processed` notifications, so
// no statement) and the lag in events at each snapshot, and per version its applied history for a build rate and ETA.
import type { PgPerspectiveVersions } from "@whizbang/postgres"
import type { Snapshot } from "../DashboardSnapshot.js"

export interface Series {
  readonly appliedPerSecond: ReadonlyArray<number>
  readonly lag: ReadonlyArray<number>
}

export interface Build {
  /** History events applied per second over the last samples; undefined before two samples. */
  readonly perSecond: number | undefined
  /** Seconds until the history is applied at that rate. */
  readonly etaSeconds: number | undefined
}

export interface History {
  readonly series: ReadonlyMap<string, Series>
  readonly builds: ReadonlyMap<string, Build>
}

export const empty: History = { series: new Map(), builds: new Map() }

interface Sample {
  readonly at: number
  readonly applied: number
}

const appliedHistory = (v: PgPerspectiveVersions.VersionInfo) => v.progress * v.historyEvents

/** Accumulates between snapshots; `next` folds one snapshot in. One fiber (the hub's) calls it. */
export const make = (points: number) => {
  const applied = new Map<string, number>()
  const series = new Map<string, { appliedPerSecond: Array<number>; lag: Array<number> }>()
  const builds = new Map<string, Array<Sample>>()
  let last: number | undefined
  const push = (values: Array<number>, value: number) => {
    values.push(value)
    if (values.length > points) values.splice(0, values.length - points)
  }
  return {
    /** A completion notification named `count` events applied by `perspective`. */
    countApplied: (perspective: string, count: number) => applied.set(perspective, (applied.get(perspective) ?? 0) + count),
    next: (snapshot: Snapshot, now: number): History => {
      const seconds = last === undefined ? undefined : Math.max((now - last) / 1000, 0.001)
      last = now
      for (const p of snapshot.status.perspectives) {
        const s = series.get(p.perspective) ?? { appliedPerSecond: [], lag: [] }
        series.set(p.perspective, s)
        if (seconds !== undefined) push(s.appliedPerSecond, (applied.get(p.perspective) ?? 0) / seconds)
        push(s.lag, p.pending)
      }
      applied.clear()
      const rates = new Map<string, Build>()
      for (const v of snapshot.status.versions) {
        if (v.state !== "building") {
          builds.delete(v.perspectiveName)
          continue
        }
        const samples = builds.get(v.perspectiveName) ?? []
        builds.set(v.perspectiveName, samples)
        samples.push({ at: now, applied: appliedHistory(v) })
        if (samples.length > 10) samples.shift()
        const first = samples[0]!
        const span = (now - first.at) / 1000
        const perSecond = samples.length < 2 || span <= 0 ? undefined : (appliedHistory(v) - first.applied) / span
        const remaining = v.historyEvents - appliedHistory(v)
        rates.set(v.perspectiveName, {
          perSecond,
          etaSeconds: perSecond === undefined || perSecond <= 0 ? undefined : remaining / perSecond
        })
      }
      return {
        series: new Map([...series].map(([k, s]) => [k, { appliedPerSecond: [...s.appliedPerSecond], lag: [...s.lag] }])),
        builds: rates
      }
    }
  }
}
