import * as PG from "./Postgres.js"
import * as QC from "./QueryCounter.js"
import * as Domain from "./Domain.js"
import * as W from "./systems/Whizbang.js"
const server = await PG.startServer()
QC.install()
const n = Number(process.argv[2] ?? 20000), s = Number(process.argv[3] ?? 2000)
const options = JSON.parse(process.argv[4] ?? "{}")
await PG.withFreshDatabase(server.url, "prof", async (url) => {
  const db = PG.pool(url)
  await W.migrate(url, db)
  await W.load(db, 0, n, s)
  QC.reset()
  const o = await W.withInstances(url, { instances: 1, options }, async ({ observed }) => {
    await W.untilApplied(observed, n * 2, 600000)
    return { ...observed }
  })
  console.log("events/s", n / ((o.lastCommit - o.firstClaim) / 1000), Domain.verify(Domain.expected(n, s), await W.readModels(db)).length === 0 ? "consistent" : "INCONSISTENT")
  console.log(QC.report().split("\n").slice(0, 12).join("\n"))
  await db.end()
})
await server.stop()
process.exit(0)
