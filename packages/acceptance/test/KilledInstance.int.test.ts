// A killed worker process is seen by its LISTEN session, not only by its silence. Worker processes run through
// `Whizbang.layer` with a 60 s stale-instance threshold; one is killed (SIGKILL: no finalizer runs, its row and
// leases stay, its connections drop). Its replacement's start abandons it at once, with its leases, so none of its
// partitions wait out the affinity grace for a minute; the work appended around the kill is applied exactly once.
// Without a replacement, the survivor's next heartbeat (a third of the threshold) does the same.
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Effect, Schedule } from "effect"
import { PgClient } from "whizbang"
import * as Workers from "./support/workers.js"
import * as Writer from "./support/writer.js"

const options = { abandonStaleInstanceThreshold: "60 seconds" }

const query = <Row extends object>(sql: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (client) => client.query<Row>(sql, params))

/** The registered workers' instance ids and the pid of their LISTEN session (null until recorded). */
const registered = Effect.map(
  query<{ id: string; pid: number | null }>(
    "select instance_id::text as id, (metadata->'session'->>'pid')::int as pid from wh_service_instances where service_name = 'acceptance-worker'"
  ),
  (rows) => new Map(rows.map((r) => [r.id, r.pid]))
)

/** Until `p` holds of the registered workers, checking every 20 ms, for at most `seconds` (10 s). */
const registeredUntil = (p: (rows: Map<string, number | null>) => boolean, seconds = 10) =>
  registered.pipe(Effect.repeat({ until: p, schedule: Schedule.spaced("20 millis"), times: seconds * 50 }))

/** Until the server has ended the session `pid` (a killed process's backend exits once its socket is seen closed). */
const sessionEnded = (pid: number | null) =>
  query<{ n: number }>("select count(*)::int as n from pg_stat_activity where pid = $1", [pid]).pipe(
    Effect.repeat({ until: ([r]) => r!.n === 0, schedule: Schedule.spaced("20 millis"), times: 500 })
  )

/** Once `workers` drained every work row: the killed instance's leases left, both folds' mismatches, and the counts. */
const settled = (workers: ReadonlyArray<Workers.Worker>, killedId: string) =>
  Effect.gen(function* () {
    const leases = yield* query<{ n: number }>("select count(*)::int as n from wh_active_streams where instance_id = $1", [killedId])
    yield* Workers.settle(
      workers,
      Effect.map(Writer.counts, (c) => c.work)
    )
    return {
      leases: leases[0]!.n,
      balance: yield* Writer.mismatches("balance"),
      activity: yield* Writer.mismatches("activity"),
      left: yield* Writer.counts
    }
  })

describe("a killed worker process", () => {
  it.live(
    "is abandoned with its leases as soon as its replacement starts, not after the threshold; nothing lost or doubled",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "killed_instance"
        const result = yield* Effect.gen(function* () {
          const streams = Writer.streams(40)
          yield* Writer.appendConcurrently({ streamIds: streams, appenders: 4, perAppender: 50, batch: 5 })
          const survivor = yield* Workers.start({ url, schema, options })
          const [first] = [...(yield* registeredUntil((rows) => rows.size === 1)).keys()]
          const killed = yield* Workers.start({ url, schema, options })
          const both = yield* registeredUntil((rows) => rows.size === 2 && [...rows.values()].every((pid) => pid !== null))
          const [killedId, pid] = [...both].find(([id]) => id !== first)!
          yield* Writer.appendConcurrently({ streamIds: streams, appenders: 4, perAppender: 50, batch: 5 })
          yield* killed.kill
          yield* sessionEnded(pid)
          const beforeRestart = [...(yield* registered).keys()].includes(killedId)
          yield* Writer.appendConcurrently({ streamIds: streams, appenders: 4, perAppender: 50, batch: 5 })
          const restarted = yield* Workers.start({ url, schema, options })
          const afterRestart = [...(yield* registered).keys()].includes(killedId)
          return { beforeRestart, afterRestart, ...(yield* settled([survivor, restarted], killedId)) }
        }).pipe(Effect.provide(Writer.layer(url, schema)), Effect.scoped)
        expect(result).toMatchObject({ beforeRestart: true, afterRestart: false, leases: 0, balance: 0, activity: 0 })
        expect(result.left).toMatchObject({ events: 600, work: 0, dead_letters: 0 })
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )

  it.live(
    "without a replacement, is abandoned by the survivor's next heartbeat, well within the threshold; nothing lost or doubled",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "killed_instance_beat"
        // Heartbeats every 15 s (a third of the threshold): the killed instance must be gone within 30 s of its end,
        // where the threshold alone would take 45 s and more.
        const threshold = { abandonStaleInstanceThreshold: "45 seconds" }
        const result = yield* Effect.gen(function* () {
          const streams = Writer.streams(40)
          const survivor = yield* Workers.start({ url, schema, options: threshold })
          const [first] = [...(yield* registeredUntil((rows) => rows.size === 1)).keys()]
          const killed = yield* Workers.start({ url, schema, options: threshold })
          const both = yield* registeredUntil((rows) => rows.size === 2 && [...rows.values()].every((pid) => pid !== null))
          const [killedId, pid] = [...both].find(([id]) => id !== first)!
          yield* Writer.appendConcurrently({ streamIds: streams, appenders: 4, perAppender: 50, batch: 5 })
          yield* killed.kill
          yield* sessionEnded(pid)
          yield* Writer.appendConcurrently({ streamIds: streams, appenders: 4, perAppender: 50, batch: 5 })
          const gone = !(yield* registeredUntil((rows) => !rows.has(killedId), 30)).has(killedId)
          return { gone, ...(yield* settled([survivor], killedId)) }
        }).pipe(Effect.provide(Writer.layer(url, schema)), Effect.scoped)
        expect(result).toMatchObject({ gone: true, leases: 0, balance: 0, activity: 0 })
        expect(result.left).toMatchObject({ events: 400, work: 0, dead_letters: 0 })
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )
})
