/**
 * `pnpm --filter @whizbang/bench bench [--profile quick|full] [--only a,b,c,d,g,v,t,x] [--citus <url>] [overrides]`
 *
 * Runs the scenarios against one PostgreSQL (DATABASE_URL, else WHIZBANG_TEST_DATABASE_URL, else an embedded
 * one), each system in a fresh database, prints a table per scenario and writes results/<scenario>-<profile>.json,
 * results/latest-<profile>.md and results/chart-<profile>.svg. Exits non-zero if a scenario fails or any read
 * model differs from its fold — never on timings.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as Chart from "./Chart.js"
import * as CycleProfiler from "./CycleProfiler.js"
import * as PG from "./Postgres.js"
import * as Profile from "./Profile.js"
import * as QueryCounter from "./QueryCounter.js"
import * as Append from "./scenarios/Append.js"
import * as Distributed from "./scenarios/Distributed.js"
import * as Latency from "./scenarios/Latency.js"
import * as ReadYourWrites from "./scenarios/ReadYourWrites.js"
import * as Scale from "./scenarios/Scale.js"
import * as Throughput from "./scenarios/Throughput.js"
import * as VersionRebuild from "./scenarios/VersionRebuild.js"
import * as Table from "./Table.js"
import * as Tenants from "./scenarios/Tenants.js"

PG.tolerateDroppedDatabases()
const args = process.argv.slice(2)
const profile = Profile.fromArgs(args)
const only = new Set(
  // t (tenants) runs only when named: it provisions a thousand schemas (minutes), more than CI's quick smoke test allows;
  // x (Citus beside plain PostgreSQL) too: it needs a Citus coordinator (--citus).
  (Profile.stringArg(args, "only") ?? "a,b,c,d,g,v")
    .split(",")
    .map((s) => s.trim())
    .map((s) => (s === "tenants" ? "t" : s))
)
const resultsDir = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..", "results")
mkdirSync(resultsDir, { recursive: true })
if (args.includes("--count-queries")) QueryCounter.install()
if (args.includes("--profile-cycles")) CycleProfiler.install()

const started = Date.now()
const log = (s: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${s}`)
const write = (name: string, data: unknown) =>
  writeFileSync(Path.join(resultsDir, name), typeof data === "string" ? data : `${JSON.stringify(data, null, 2)}\n`)

const citusUrl = Profile.stringArg(args, "citus") ?? process.env.BENCH_CITUS_URL
if (only.has("x") && (citusUrl === undefined || (await PG.citusWorkers(citusUrl).catch(() => undefined)) === undefined)) {
  console.error(
    `scenario x needs a Citus coordinator with worker nodes: --citus <url> or BENCH_CITUS_URL (${citusUrl ?? "not set"}); ../shared/citus/cluster.sh start runs one`
  )
  process.exit(2)
}
const server = await PG.startServer()
let failed = false
try {
  const machine = await PG.machineFacts(server)
  const machineTable: Table.Table = {
    title: "Machine",
    head: ["fact", "value"],
    rows: [
      ["cpus", `${machine.cpus} x ${machine.cpuModel}`],
      ["memory", `${machine.memoryGb} GB`],
      ["node", machine.node],
      ["os", machine.platform],
      ["postgres", `${machine.postgres} — ${machine.postgresSource}`],
      ["load average at start (1/5/15 min)", machine.loadAverage],
      ...Object.entries(machine.settings).map(([k, v]) => [k, v])
    ]
  }
  console.log(Table.text(machineTable))
  log(`profile ${profile.name}: ${JSON.stringify(profile)}`)
  const tables: Array<Table.Table> = [machineTable]
  let throughput: Throughput.Result | undefined
  let latency: Latency.Result | undefined

  const scenario = async <R>(
    key: string,
    name: string,
    body: () => Promise<R>,
    table: (r: R) => Table.Table,
    failures: (r: R) => ReadonlyArray<unknown>
  ) => {
    if (!only.has(key)) return undefined
    try {
      const result = await body()
      const t = table(result)
      console.log(Table.text(t))
      tables.push(t)
      write(`${name}-${profile.name}.json`, { profile, machine, result })
      const failing = failures(result)
      if (failing.length > 0) {
        failed = true
        // What went wrong goes to stderr too: CI shows a failure's first lines, not the tables far above them.
        console.error(`${name}: a run failed, or some read models differ from their folds:`)
        for (const f of failing) console.error(`  ${JSON.stringify(f).slice(0, 1000)}`)
      }
      return result
    } catch (error) {
      failed = true
      console.error(`${name} failed:`, error)
      return undefined
    }
  }

  throughput = await scenario(
    "a",
    "throughput",
    () => Throughput.run(server.url, profile, log),
    (r) => Throughput.table(r, profile),
    (r) => r.runs.filter((x) => x.problems.length > 0)
  )
  latency = await scenario(
    "b",
    "latency",
    () => Latency.run(server.url, profile, log),
    (r) => Latency.table(r, profile),
    (r) => r.runs.filter((x) => x.problems.length > 0)
  )
  await scenario(
    "c",
    "read-your-writes",
    () => ReadYourWrites.run(server.url, profile, log),
    (r) => ReadYourWrites.table(r, profile),
    (r) => r.runs.filter((x) => x.problems.length > 0)
  )
  await scenario(
    "d",
    "scale",
    () => Scale.run(server.url, profile, log),
    (r) => Scale.table(r, profile),
    (r) => r.runs.filter((x) => x.problems.length > 0)
  )
  await scenario(
    "g",
    "append",
    () => Append.run(server.url, profile, Append.appendsOf(profile, args), log),
    (r) => Append.table(r, profile),
    (r) => r.runs.filter((x) => x.problems.length > 0)
  )
  await scenario(
    "v",
    "version-rebuild",
    () => VersionRebuild.run(server.url, profile, log),
    (r) => VersionRebuild.table(r, profile),
    (r) => r.runs.filter((x) => x.problems.length > 0)
  )
  await scenario(
    "t",
    "tenants",
    () => Tenants.run(server.url, profile, log),
    (r) => Tenants.table(r, profile),
    (r) => r.problems
  )
  await scenario(
    "x",
    "citus",
    () => Distributed.run(server.url, citusUrl!, profile, log),
    (r) => Distributed.table(r, profile),
    (r) => r.problems
  )
  if (args.includes("--count-queries")) console.log(`\n== Round trips by statement (all scenarios)\n${QueryCounter.report()}`)

  const md = [
    `# Whizbang benchmark — profile \`${profile.name}\``,
    "",
    `Run ${new Date().toISOString()}, ${((Date.now() - started) / 1000).toFixed(0)} s. Reproduce: \`pnpm --filter @whizbang/bench bench ${args.join(" ")}\`.`,
    "",
    ...tables.map(Table.markdown),
    `Load average at the end (1/5/15 min): ${Os.loadavg()
      .map((n) => n.toFixed(2))
      .join(" / ")}.`,
    ""
  ].join("\n")
  write(`latest-${profile.name}.md`, md)
  // The committed summary is the last full-profile run's that included scenario a (a run of t or v alone has its own
  // results file and must not replace it).
  if (profile.name === "full" && only.has("a")) write("latest.md", md)
  // The chart shows a and b: a run without them keeps the last chart.
  if (throughput !== undefined || latency !== undefined)
    write(
      `chart-${profile.name}.svg`,
      Chart.render(
        [
          ...(throughput
            ? [
                {
                  title: "Throughput, events/s (median, min–max)",
                  unit: "ev/s",
                  bars: throughput.summary.map((s) => ({
                    label: s.system,
                    value: s.eventsPerSecond.median,
                    min: s.eventsPerSecond.min,
                    max: s.eventsPerSecond.max
                  }))
                }
              ]
            : []),
          ...(latency
            ? ["p50", "p99"].map((p) => ({
                title: `Whizbang latency ${p}, ms (append commit -> read models committed)`,
                unit: "ms",
                bars: latency!.summary.map((s) => {
                  const v = s[p as "p50" | "p99"]
                  return { label: `${s.options} @ ${s.rate}/s`, value: v.median, min: v.min, max: v.max }
                })
              }))
            : [])
        ],
        `${machine.cpus} cores, ${machine.postgres}, profile ${profile.name}`
      )
    )
  log(
    `wrote ${resultsDir}/latest-${profile.name}.md${throughput !== undefined || latency !== undefined ? ` and chart-${profile.name}.svg` : ""}`
  )
} finally {
  await server.stop()
}
if (failed) {
  console.error("bench: FAILED (a scenario failed or a read model differs from its fold)")
  process.exit(1)
}
log("bench: every scenario completed and every read model equals its fold")
process.exit(0)
