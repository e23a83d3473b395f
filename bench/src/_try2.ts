import * as PG from "./Postgres.js"
import * as Domain from "./Domain.js"
import * as E from "./systems/Emmett.js"
import * as G from "./systems/GraphileWorker.js"
import * as B from "./systems/PgBoss.js"
const server = await PG.startServer()
const N = 4000, S = 400
const want = Domain.expected(N, S)
for (const name of process.argv.slice(2)) {
  await PG.withFreshDatabase(server.url, name, async (url) => {
    const db = PG.pool(url, 12)
    let t = performance.now()
    let r: { start: number; end: number }
    if (name === "emmett") {
      await E.load(url, 0, N, S); console.log("load", performance.now() - t)
      r = await E.process(url)
      console.log(name, N / ((r.end - r.start) / 1000), Domain.verify(want, await E.read(db)))
    } else if (name === "graphile") {
      await G.setup(url, db); await G.load(db, 0, N, S); console.log("load", performance.now() - t)
      r = await G.process(url, db, N)
      const { read } = await import("./systems/ReadModels.js")
      console.log(name, N / ((r.end - r.start) / 1000), Domain.verify(want, await read(db)))
    } else {
      await B.setup(url, db); await B.load(db, 0, N, S); console.log("load", performance.now() - t)
      r = await B.process(url, db, N)
      const { read } = await import("./systems/ReadModels.js")
      console.log(name, N / ((r.end - r.start) / 1000), Domain.verify(want, await read(db)))
    }
    await db.end()
  })
}
await server.stop()
