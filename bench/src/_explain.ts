import * as PG from "./Postgres.js"
import * as W from "./systems/Whizbang.js"
import * as Claim from "../../packages/postgres/dist/sql/claimWork.js"
import * as Fetch from "../../packages/postgres/dist/sql/fetchPendingEvents.js"
const server = await PG.startServer()
const n = Number(process.argv[2] ?? 100000), s = Number(process.argv[3] ?? 10000)
await PG.withFreshDatabase(server.url, "explain", async (url) => {
  const db = PG.pool(url)
  await W.migrate(url, db)
  await W.load(db, 0, n, s)
  const me = "11111111-1111-4111-8111-111111111111"
  await db.query("SET search_path = bench")
  const c = await db.connect()
  await c.query("SET search_path = bench")
  await c.query(`INSERT INTO wh_service_instances (instance_id, service_name, host_name, process_id, started_at, last_heartbeat_at) VALUES ($1, 'b', 'h', 1, now(), now())`, [me]).catch((e) => console.log("instance row:", e.message))
  for (let k = 0; k < 2; k++) {
    await c.query("BEGIN")
    const plan = await c.query(`EXPLAIN (ANALYZE, BUFFERS) ${Claim.claimWork}`, [me, 300, 300, 30, 3000])
    if (k === 1) console.log(plan.rows.map((r) => r["QUERY PLAN"]).join("\n"))
    else console.log("first claim:", plan.rows.at(-1)["QUERY PLAN"])
    await c.query("COMMIT")
  }
  const streams = (await c.query(`SELECT stream_id FROM wh_active_streams LIMIT 300`)).rows.map((r) => r.stream_id)
  const plan = await c.query(`EXPLAIN (ANALYZE, BUFFERS) ${Fetch.fetchPendingEvents}`, [me, streams, 100])
  console.log(plan.rows.map((r) => r["QUERY PLAN"]).join("\n"))
  c.release()
  await db.end()
})
await server.stop()
