/**
 * Scenario x (issue 40, point 5): scenario a (Whizbang's instances only) and the tenants scenario t on a Citus cluster
 * beside plain PostgreSQL, in one run, as ratios Citus / plain. Runs when named (`--only x`) with `--citus <url>` (or
 * BENCH_CITUS_URL): the coordinator's URL of a cluster with worker nodes (`../shared/citus/cluster.sh start`).
 *
 * Each system gets a fresh database on its server; on the coordinator that is a Citus database of its own with
 * schema-based sharding on (`Postgres.withFreshDatabase`), so every service and tenant schema is a distributed schema
 * placed on a worker node, and every statement goes through the coordinator's routing, as an app's would.
 * On one machine the coordinator, the workers and plain PostgreSQL share its cores: the ratios measure what distribution
 * costs per statement (routing, the extra hop), not what more nodes would add.
 */
import type { Profile } from "../Profile.js"
import * as Stats from "../Stats.js"
import type { Table } from "../Table.js"
import * as Tenants from "./Tenants.js"
import * as Throughput from "./Throughput.js"

export interface Side {
  readonly throughput: Throughput.Result
  readonly tenants: Tenants.Result
}

export interface Result {
  readonly plain: Side
  readonly citus: Side
  readonly problems: ReadonlyArray<string>
}

/** Scenario a without the baseline and the peers: Whizbang's instance counts only. */
const whizbangOnly = (profile: Profile): Profile => ({
  ...profile,
  throughput: { ...profile.throughput, baselineLoops: [], peers: [] }
})

const side = async (label: string, url: string, profile: Profile, log: (s: string) => void): Promise<Side> => {
  log(`distributed: scenario a on ${label}`)
  const throughput = await Throughput.run(url, whizbangOnly(profile), log)
  log(`distributed: scenario t on ${label}`)
  const tenants = await Tenants.run(url, profile, log)
  return { throughput, tenants }
}

export const run = async (plainUrl: string, citusUrl: string, profile: Profile, log: (s: string) => void): Promise<Result> => {
  const plain = await side("plain PostgreSQL", plainUrl, profile, log)
  const citus = await side("Citus", citusUrl, profile, log)
  const problems = [plain, citus].flatMap((s, i) => {
    const label = i === 0 ? "plain" : "citus"
    return [
      ...s.throughput.runs.flatMap((r) => r.problems.map((p) => `${label} ${r.system}: ${p}`)),
      ...s.tenants.problems.map((p) => `${label} tenants: ${p}`)
    ]
  })
  return { plain, citus, problems }
}

const ratio = (citus: number, plain: number) => (plain > 0 ? `${Stats.fmt(citus / plain, 2)}x` : "-")

const p99 = (r: Tenants.Result, window: Tenants.Lag["window"]) => r.lag.find((l) => l.window === window)?.latency.p99 ?? Number.NaN

const peak = (r: Tenants.Result) => Math.max(0, ...Object.values(r.peakConnections))

export const table = (r: Result, profile: Profile): Table => {
  const rows: Array<Array<string>> = []
  for (const s of r.plain.throughput.summary) {
    const c = r.citus.throughput.summary.find((x) => x.system === s.system)
    if (c === undefined) continue
    rows.push([
      `a: ${s.system}, events/s (median)`,
      Stats.fmt(s.eventsPerSecond.median),
      Stats.fmt(c.eventsPerSecond.median),
      ratio(c.eventsPerSecond.median, s.eventsPerSecond.median)
    ])
  }
  const [p, c] = [r.plain.tenants, r.citus.tenants]
  rows.push(
    [
      "t: single tenant, events/s",
      Stats.fmt(p.single.eventsPerSecond),
      Stats.fmt(c.single.eventsPerSecond),
      ratio(c.single.eventsPerSecond, p.single.eventsPerSecond)
    ],
    [
      `t: ${p.tenants} tenants, events/s`,
      Stats.fmt(p.throughput.eventsPerSecond),
      Stats.fmt(c.throughput.eventsPerSecond),
      ratio(c.throughput.eventsPerSecond, p.throughput.eventsPerSecond)
    ],
    [
      "t: tenants / single tenant",
      ratio(p.throughput.eventsPerSecond, p.single.eventsPerSecond),
      ratio(c.throughput.eventsPerSecond, c.single.eventsPerSecond),
      "-"
    ],
    [
      "t: provisioning, tenants/s",
      Stats.fmt(p.provisioning.perSecond, 1),
      Stats.fmt(c.provisioning.perSecond, 1),
      ratio(c.provisioning.perSecond, p.provisioning.perSecond)
    ],
    ["t: idle tenants, transactions/s", Stats.fmt(p.idle.transactionsPerSecond, 2), Stats.fmt(c.idle.transactionsPerSecond, 2), "-"],
    [
      "t: quiet tenants' lag p99 without a replay, ms",
      Stats.fmt(p99(p, "without replay")),
      Stats.fmt(p99(c, "without replay")),
      ratio(p99(c, "without replay"), p99(p, "without replay"))
    ],
    [
      "t: quiet tenants' lag p99 during the replay, ms",
      Stats.fmt(p99(p, "during replay")),
      Stats.fmt(p99(c, "during replay")),
      ratio(p99(c, "during replay"), p99(p, "during replay"))
    ],
    [
      "t: replay, events/s",
      Stats.fmt(p.replay.eventsPerSecond),
      Stats.fmt(c.replay.eventsPerSecond),
      ratio(c.replay.eventsPerSecond, p.replay.eventsPerSecond)
    ],
    ["t: peak connections per worker process (coordinator)", String(peak(p)), String(peak(c)), "-"]
  )
  return {
    title: "x. Citus (coordinator + 2 worker nodes, schema-based sharding) beside plain PostgreSQL, same machine, same run",
    head: ["figure", "plain PostgreSQL", "Citus", "Citus / plain"],
    rows,
    notes: [
      `scenario a: ${profile.throughput.events.toLocaleString("en-US")} events over ${profile.throughput.streams.toLocaleString("en-US")} streams, Whizbang only, ${profile.repetitions} repetition(s); t: ${profile.tenants.tenants} tenants, ${profile.tenants.workers} tenant worker processes`,
      "one machine runs plain PostgreSQL, the coordinator and both worker nodes: the ratios are the cost of distribution per statement, not a speed-up",
      ...(r.problems.length > 0 ? [`problems: ${r.problems.slice(0, 5).join("; ")}`] : [])
    ]
  }
}
