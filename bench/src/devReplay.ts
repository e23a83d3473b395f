// DEV ONLY (not committed): replay rate vs baseline on the server at DATABASE_URL.
import { PgClient, PgHistoryReplay, PgPerspectiveVersions } from "@whizbang/postgres"
import { Duration, Effect, Layer, Logger } from "effect"
import * as Domain from "./Domain.js"
import * as PG from "./Postgres.js"
import * as Baseline from "./systems/Baseline.js"
import * as Whizbang from "./systems/Whizbang.js"
import * as Versions from "./systems/WhizbangVersions.js"

const server = process.env.DATABASE_URL!
const events = Number(process.env.N ?? 200000)
const streams = Number(process.env.S ?? 20000)
const conc = Number(process.env.C ?? 1)
const chunk = Number(process.env.CHUNK ?? 5000)

await PG.withFreshDatabase(server, "dev", async (url) => {
  const db = PG.pool(url)
  await Whizbang.migrate(url)
  await Versions.registerV1(url)
  await Whizbang.load(db, 0, events, streams, [])
  await Versions.loadV1Models(db)
  const client = PgClient.layer({ url, schema: Whizbang.schema, maxConnections: 4 })
  await Effect.runPromise(Effect.asVoid(PgPerspectiveVersions.register(Domain.perspectivesWithV2).pipe(Effect.provide(client), Effect.orDie)))
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        yield* Layer.build(
          PgHistoryReplay.layer({
            perspectives: [Domain.counterV2Perspective],
            events: Domain.registry,
            partitionCount: 10000,
            options: { replay: "auto", concurrency: conc, chunkEvents: chunk, liveLagTargetMillis: 50 },
            interval: Duration.millis(50)
          })
        )
        while (true) {
          const r = yield* Effect.promise(() => db.query(`SELECT count(*)::int AS n FROM ${Whizbang.schema}.wh_perspective_backfill`))
          if (r.rows[0].n === 0) break
          yield* Effect.sleep(Duration.millis(20))
        }
      }).pipe(Effect.provide(client), Effect.provide(Logger.layer([Logger.consolePretty()])))
    )
  )
  const ms = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  console.log(`replay: ${events} events in ${(ms / 1000).toFixed(2)} s = ${Math.round(events / (ms / 1000))} ev/s, node cpu ${((cpu.user + cpu.system) / 1000 / (events / 1000)).toFixed(1)} ms/1000`)
  const bad = Domain.verifyModel("v2", Domain.expectedCounterV2(events, streams), await Versions.readTable(db, Versions.tableOf("counter__v2")))
  console.log(`problems: ${bad.length} ${bad.slice(0, 3).join("; ")}`)
  await db.end()
})
if (process.env.BASE === "1") {
  await PG.withFreshDatabase(server, "devb", async (url) => {
    const db = PG.pool(url)
    await Whizbang.migrate(url)
    await Whizbang.load(db, 0, events, streams, [])
    const table = "wh_per_counter__v2"
    await Baseline.createModelTables(db, [table])
    const start = performance.now()
    await db.query(`INSERT INTO ${Whizbang.schema}.wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
      SELECT gen_random_uuid(), stream_id, 'counter__v2', event_id, abs(hashtext(stream_id::text)) % 10000 FROM ${Whizbang.schema}.wh_events`)
    await db.query(`ANALYZE ${Whizbang.schema}.wh_perspective_events`)
    const r = await Baseline.run(db, 1, 600, [{ perspective: "counter__v2", table, initial: Domain.counterV2Initial, fold: Domain.foldCounterV2 }])
    const ms = r.end - start
    console.log(`baseline: ${Math.round(events / (ms / 1000))} ev/s`)
    await db.end()
  })
}
process.exit(0)
