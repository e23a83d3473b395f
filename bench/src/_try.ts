import * as PG from "./Postgres.js"
import * as W from "./systems/Whizbang.js"
import * as Domain from "./Domain.js"
const server = await PG.startServer()
console.log(server.url)
await PG.withFreshDatabase(server.url, "try", async (url) => {
  await W.migrate(url)
  const db = PG.pool(url)
  const N = 20000, S = 2000
  let t = performance.now()
  await W.load(db, 0, N, S)
  console.log("load", performance.now() - t)
  const r = await W.withInstances(url, { instances: 1 }, async ({ observed }) => {
    await W.untilApplied(observed, N * 2, 120000)
    return { ...observed }
  })
  console.log(r, N / ((r.lastCommit - r.firstClaim) / 1000), "ev/s")
  console.log(Domain.verify(Domain.expected(N, S), await W.readModels(db)), await W.pendingWork(db))
  await db.end()
})
await server.stop()
