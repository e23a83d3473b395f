/**
 * The server-side cost of the worker's claim-and-fetch statement (`claimWork.claimAndFetch`, with models), without
 * the noise of a running worker: loads the bench's data set into its own database, then runs the statement under
 * `EXPLAIN (ANALYZE, BUFFERS)` in transactions that are rolled back (so every run claims the same 300 streams of an
 * untouched queue), and prints the median execution time. `--plan` also prints the first run's plan with timing on.
 *
 *   DATABASE_URL=postgres://... node --import tsx bench/src/claimAndFetchPlan.ts [--events 50000] [--streams 5000]
 *     [--runs 7] [--reuse] [--plan] [--cursors] [--analyze] [--generic]
 *
 * `--reuse` keeps the database of an earlier run (`bench_claim_plan`) instead of loading it again. `--cursors` first
 * gives every pending (stream, perspective) a cursor below its events (a running service, where the streams were
 * processed before; nothing becomes a late arrival), `--analyze` then analyses every table (a service autovacuum
 * has seen).
 */
import pg from "pg"
import * as Claim from "../../packages/postgres/src/sql/claimWork.js"
import * as Rows from "../../packages/postgres/src/sql/perspectiveRows.js"
import * as PG from "./Postgres.js"
import { numberArg } from "./Profile.js"
import * as Whizbang from "./systems/Whizbang.js"

const args = process.argv.slice(2)
const server = process.env.DATABASE_URL ?? process.env.WHIZBANG_TEST_DATABASE_URL
if (server === undefined) throw new Error("set DATABASE_URL (or WHIZBANG_TEST_DATABASE_URL) to a PostgreSQL server")
const database = "bench_claim_plan"
const url = PG.withDatabaseName(server, database)
const perspectives = ["counter", "summary"]

if (!args.includes("--reuse")) {
  await PG.admin(server, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  await PG.admin(server, `CREATE DATABASE ${database}`)
  await Whizbang.migrate(url)
  const db = PG.pool(url)
  await Whizbang.load(db, 0, numberArg(args, "events") ?? 50_000, numberArg(args, "streams") ?? 5_000)
  for (const name of perspectives) await db.query(`SET search_path = ${Whizbang.schema}; ${Rows.createTable(name)}`)
  await db.end()
}

if (args.includes("--cursors") || args.includes("--analyze")) {
  const db = PG.pool(url)
  if (args.includes("--cursors")) {
    await db.query(`SET search_path = ${Whizbang.schema}; INSERT INTO wh_perspective_cursors (stream_id, perspective_name, last_event_id)
      SELECT DISTINCT stream_id, perspective_name, '00000000-0000-0000-0000-000000000000'::uuid FROM wh_perspective_events
      ON CONFLICT DO NOTHING`)
  }
  if (args.includes("--analyze")) await db.query(`SET search_path = ${Whizbang.schema}; ANALYZE`)
  await db.end()
}

// As the worker sends it: its session settings, the defaults' limits (300 streams, 100 rows per pair, 2,000 rows
// of background work), a registered-nowhere instance (the registry not in use: it takes everything).
const client = new pg.Client({ connectionString: url, options: `-c search_path=${Whizbang.schema} -c jit=off` })
await client.connect()
const text = Claim.claimAndFetchSql(perspectives.map(Rows.table))
const params = ["0190f000-0000-7000-8000-000000000001", 300, 300, 30, 3000, [], perspectives, perspectives.length, 100, 2000, true]
// `--generic`: the plan the worker ends up with. Its statements are prepared, and PostgreSQL plans a prepared
// statement once for all parameter values (a generic plan) after five executions when that plan looks no dearer.
const generic = args.includes("--generic")
if (generic) await client.query(`SET plan_cache_mode = force_generic_plan; PREPARE claim_and_fetch AS ${text}`)
// EXECUTE takes its arguments as SQL (the probe's own values: uuids, numbers, arrays of plain names).
const literal = (value: unknown) =>
  typeof value === "number" ? String(value) : Array.isArray(value) ? `'{${value.join(",")}}'` : `'${String(value)}'`
const explained = generic ? `EXECUTE claim_and_fetch(${params.map(literal).join(", ")})` : text
const times: Array<number> = []
const runs = numberArg(args, "runs") ?? 7
for (let run = 0; run < runs; run++) {
  const timing = run === 0 && args.includes("--plan")
  await client.query("BEGIN")
  const result = await client.query(`EXPLAIN (ANALYZE, BUFFERS, TIMING ${timing ? "on" : "off"}) ${explained}`, generic ? [] : params)
  await client.query("ROLLBACK")
  const plan = result.rows.map((row) => row["QUERY PLAN"]).join("\n")
  if (timing) console.log(plan)
  else times.push(Number(/Execution Time: ([0-9.]+)/.exec(plan)?.[1]))
}
await client.end()
times.sort((a, b) => a - b)
console.log(
  `claim-and-fetch execution, ms: median ${times[times.length >> 1]}, min ${times[0]}, max ${times.at(-1)} (${times.length} runs)`
)
