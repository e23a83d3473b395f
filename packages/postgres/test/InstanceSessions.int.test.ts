// A process that is gone is seen by its LISTEN session, not only by its silence: each instance records the server
// session of its process's LISTEN connection, and registration and every heartbeat abandon the instances whose
// session has ended on this run of the server. The threshold here is 60 s, so nothing below is its doing.
import { describe, expect } from "@effect/vitest"
import { EventId } from "@whizbang/core"
import { PgClient, PgInstanceRegistry, TenantStart } from "@whizbang/postgres"
import { Duration, Effect, Schedule } from "effect"
import pg from "pg"
import { epochMicros } from "../src/internal/epochMicros.js"
import * as Sql from "../src/sql/serviceInstances.js"
import { type Node, startNode } from "./fixtures/instances.js"
import { scenario } from "./fixtures/scenario.js"

const options = { abandonStaleInstanceThreshold: Duration.seconds(60) }

const sql = <Row extends object = Record<string, unknown>>(node: Node, text: string, params: ReadonlyArray<unknown> = []) =>
  node.run(Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<Row>(text, params))).pipe(Effect.orDie)

const instances = (node: Node) =>
  Effect.map(sql<{ instance_id: string }>(node, "select instance_id from wh_service_instances order by instance_id"), (rows) =>
    rows.map((r) => r.instance_id).sort()
  )

/** The pid `node` recorded for `instanceId`, once it recorded one other than `not` (checked every 20 ms, 10 s at most). */
const recordedPid = (node: Node, instanceId: string, not?: number) =>
  sql<{ pid: number | null }>(node, "select (metadata->'session'->>'pid')::int as pid from wh_service_instances where instance_id = $1", [
    instanceId
  ]).pipe(
    Effect.map(([row]) => row?.pid ?? null),
    Effect.repeat({ until: (pid) => pid !== null && pid !== not, schedule: Schedule.spaced("20 millis"), times: 500 }),
    Effect.map((pid) => {
      if (pid === null || pid === not) throw new Error(`instance ${instanceId} recorded no new LISTEN session in 10 s`)
      return pid
    })
  )

/** Until the server has no backend with `pid` (a killed client's backend exits on its own time). */
const backendGone = (node: Node, pid: number) =>
  sql<{ n: number }>(node, "select count(*)::int as n from pg_stat_activity where pid = $1", [pid]).pipe(
    Effect.repeat({ until: ([r]) => r!.n === 0, schedule: Schedule.spaced("20 millis"), times: 500 })
  )

const beat = (node: Node) => node.run(Effect.flatMap(Effect.service(PgInstanceRegistry.PgInstanceRegistry), (r) => Effect.orDie(r.beat)))

/** A server session that has ended: a connection's pid and starts, read before it closed and its backend exited. */
const endedSession = (url: string, node: Node) =>
  Effect.gen(function* () {
    const connection = new pg.Client({ connectionString: url })
    yield* Effect.promise(() => connection.connect())
    const { rows } = yield* Effect.promise(() =>
      connection.query<{ pid: number; backend_start: string; server_start: string }>(
        `select pg_backend_pid() as pid, ${epochMicros("backend_start")} as backend_start, ${epochMicros("pg_postmaster_start_time()")} as server_start
         from pg_stat_activity where pid = pg_backend_pid()`
      )
    )
    yield* Effect.promise(() => connection.end())
    const row = rows[0]!
    yield* backendGone(node, row.pid)
    return { pid: row.pid, backendStart: row.backend_start, serverStart: row.server_start }
  })

/** A registered instance with a fresh heartbeat, this LISTEN session, and a lease on a stream. */
const ghost = (node: Node, session: { readonly pid: number; readonly backendStart: string; readonly serverStart: string }) =>
  Effect.gen(function* () {
    const id = EventId.unsafeMake()
    yield* sql(
      node,
      `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at, metadata)
       values ($1, 'bank', 'ghost', 7, now(), jsonb_build_object('bootToken', 'g', 'session', $2::jsonb))`,
      [id, JSON.stringify(session)]
    )
    yield* sql(
      node,
      `insert into wh_active_streams (stream_id, instance_id, partition_number, lease_expiry)
       values ($1, $2, 0, now() + interval '1 hour')`,
      [EventId.unsafeMake(), id]
    )
    return id
  })

const leases = (node: Node, instanceId: string) =>
  Effect.map(sql(node, "select stream_id from wh_active_streams where instance_id = $1", [instanceId]), (rows) => rows.length)

describe("instances gone with their session", () => {
  scenario("an instance whose session ended is abandoned at another's next beat, with its leases; live ones are kept", (url) =>
    Effect.gen(function* () {
      const a = yield* startNode({ url, options })
      const b = yield* startNode({ url, options })
      yield* recordedPid(a, b.instanceId)
      const gone = yield* ghost(a, yield* endedSession(url, a))
      expect(yield* instances(a)).toEqual([a.instanceId, b.instanceId, gone].sort())
      yield* beat(a)
      expect(yield* instances(a)).toEqual([a.instanceId, b.instanceId].sort())
      expect(yield* leases(a, gone)).toBe(0)
    })
  )

  scenario("a process's registration abandons the instances whose session ended (a restarted process's predecessor)", (url) =>
    Effect.gen(function* () {
      const a = yield* startNode({ url, options })
      const gone = yield* ghost(a, yield* endedSession(url, a))
      const restarted = yield* startNode({ url, options })
      expect(yield* instances(restarted)).toEqual([a.instanceId, restarted.instanceId].sort())
      expect(yield* leases(a, gone)).toBe(0)
    })
  )

  // A tenant's services started by the fleet when its check saw no other instance's row (`TenantStart`): told so, the
  // registration cleans nothing up (here the fleet is wrong on purpose, to see the clean-up skipped); beats still do.
  scenario("a registration told that no other instance has a row leaves the clean-up to its heartbeats", (url) =>
    Effect.gen(function* () {
      const a = yield* startNode({ url, options })
      const gone = yield* ghost(a, yield* endedSession(url, a))
      const started = yield* startNode({ url, options }).pipe(
        Effect.provideService(TenantStart.TenantStart, { versionWork: false, otherInstances: false })
      )
      expect(yield* instances(started)).toEqual([a.instanceId, started.instanceId, gone].sort())
      expect(yield* leases(a, gone)).toBe(1)
      yield* beat(started)
      expect(yield* instances(started)).toEqual([a.instanceId, started.instanceId].sort())
      expect(yield* leases(a, gone)).toBe(0)
    })
  )

  scenario("a LISTEN connection closed by its process (a stop) is first taken off the instance's row", (url) =>
    Effect.gen(function* () {
      const a = yield* startNode({ url, options })
      const b = yield* startNode({ url, options, deregisterOnShutdown: false })
      const pid = yield* recordedPid(a, b.instanceId)
      // Its worker stops first and the LISTEN connection with it: the registry, still running, clears the session.
      yield* b.stop
      yield* backendGone(a, pid)
      const [row] = yield* sql<{ session: unknown }>(
        a,
        "select metadata->'session' as session from wh_service_instances where instance_id = $1",
        [b.instanceId]
      )
      expect(row?.session ?? null).toBe(null)
    })
  )

  scenario("a LISTEN connection lost and re-opened is recorded again: its instance is kept", (url) =>
    Effect.gen(function* () {
      const a = yield* startNode({ url, options })
      const b = yield* startNode({ url, options })
      const first = yield* recordedPid(a, b.instanceId)
      yield* sql(a, "select pg_terminate_backend($1)", [first])
      const second = yield* recordedPid(a, b.instanceId, first)
      expect(second).not.toBe(first)
      yield* beat(a)
      expect(yield* instances(a)).toEqual([a.instanceId, b.instanceId].sort())
    })
  )

  scenario("a session recorded on another run of the server is left to the threshold", (url) =>
    Effect.gen(function* () {
      const a = yield* startNode({ url, options })
      const [other, here] = [EventId.unsafeMake(), EventId.unsafeMake()]
      const insert = (id: string, serverStart: string) =>
        sql(
          a,
          `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at, metadata)
           values ($1, 'bank', 'ghost', 7, now(), jsonb_build_object('bootToken', 'g', 'session',
             jsonb_build_object('pid', 2147483000, 'backendStart', '1', 'serverStart', $2::text)))`,
          [id, serverStart]
        )
      const [server] = yield* sql<{ start: string }>(a, `select ${epochMicros("pg_postmaster_start_time()")} as start`)
      yield* insert(other, "1")
      yield* insert(here, server!.start)
      yield* beat(a)
      expect(yield* instances(a)).toEqual([a.instanceId, other].sort())
    })
  )

  scenario("the removal matches each instance with the session it recorded: another instance's ended session removes nothing", (url) =>
    Effect.gen(function* () {
      const a = yield* startNode({ url, options })
      const [first, second] = [yield* endedSession(url, a), yield* endedSession(url, a)]
      const ghosts = [yield* ghost(a, first), yield* ghost(a, second)]
      const abandon = (backendStarts: ReadonlyArray<string>) =>
        a.run(
          Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
            Effect.orDie(Sql.abandonDetached(client, { instanceIds: ghosts, backendStarts }))
          )
        )
      expect(yield* abandon([second.backendStart, first.backendStart])).toEqual([])
      expect((yield* abandon([first.backendStart, second.backendStart])).map((r) => r.instanceId).sort()).toEqual([...ghosts].sort())
    })
  )
})
