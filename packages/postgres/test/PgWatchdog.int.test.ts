import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { expect, layer } from "@effect/vitest"
import { PgClient, PgHealth, PgStatus, PgWatchdog } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Duration, Effect } from "effect"

// Seeds the wh_ tables directly, with timestamps in the past, so each stuck cause is set up exactly.
const seed = (sql: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query(sql, params))

const pendingWork = (
  options: {
    readonly perspective?: string
    readonly ageSeconds?: number
    readonly attempts?: number
    readonly backoffSeconds?: number
  } = {}
) =>
  Effect.gen(function* () {
    const streamId = randomUUID()
    const eventId = randomUUID()
    const age = options.ageSeconds ?? 120
    yield* seed(
      `insert into wh_events (event_id, stream_id, stream_version, event_type, payload, created_at) values ($1, $2, 1, 'Deposited', '{}', now() - make_interval(secs => $3))`,
      [eventId, streamId, age]
    )
    yield* seed(
      `insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, attempts, error, scheduled_for, created_at)
       values (gen_random_uuid(), $1, $2, $3, 0, $4, $5, now() + make_interval(secs => $6), now() - make_interval(secs => $7))`,
      [
        streamId,
        options.perspective ?? "balance",
        eventId,
        options.attempts ?? 0,
        options.attempts ? "audit rejected" : null,
        options.backoffSeconds ?? -1,
        age
      ]
    )
    return { streamId, eventId }
  })

const cursor = (
  streamId: string,
  columns: { readonly status?: number; readonly lockInstance?: string; readonly processedAgo?: number } = {}
) =>
  seed(
    `insert into wh_perspective_cursors (stream_id, perspective_name, status, processed_at, stream_lock_instance_id, stream_lock_expiry, stream_lock_reason)
     values ($1, 'balance', $2, now() - make_interval(secs => $3), $4, case when $4::uuid is null then null else now() + interval '1 minute' end, case when $4::uuid is null then null else 'rewind' end)`,
    [streamId, columns.status ?? 2, columns.processedAgo ?? 600, columns.lockInstance ?? null]
  )

const instance = (heartbeatAgo: number) =>
  Effect.gen(function* () {
    const id = randomUUID()
    yield* seed(
      `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at) values ($1, 'bank', 'host', 1, now() - make_interval(secs => $2))`,
      [id, heartbeatAgo]
    )
    return id
  })

const lease = (streamId: string, instanceId: string) =>
  seed(
    `insert into wh_active_streams (stream_id, instance_id, partition_number, lease_expiry) values ($1, $2, 0, now() + interval '1 minute')`,
    [streamId, instanceId]
  )

const clear = Effect.forEach(
  ["wh_perspective_events", "wh_perspective_cursors", "wh_active_streams", "wh_service_instances", "wh_dead_letters", "wh_events"],
  (t) => seed(`delete from ${t}`),
  { discard: true }
)

const watchdog = { stuckAfter: Duration.seconds(30), deadInstanceAfter: Duration.seconds(30) }

layer(PgTestDatabase.layer({ schema: "watchdog" }))((it) => {
  it.effect("watchdog: names the right reason for each stuck cause, and ignores pairs that are fine", () =>
    Effect.gen(function* () {
      yield* clear
      const live = yield* instance(1)
      const dead = yield* instance(600)
      const locked = yield* pendingWork()
      yield* cursor(locked.streamId, { lockInstance: live })
      const deadLease = yield* pendingWork()
      yield* lease(deadLease.streamId, dead)
      const ghostLease = yield* pendingWork()
      const ghost = randomUUID()
      yield* lease(ghostLease.streamId, ghost)
      const failing = yield* pendingWork({ attempts: 2, backoffSeconds: 45 })
      const rewinding = yield* pendingWork()
      yield* cursor(rewinding.streamId, { status: 32 })
      const slow = yield* pendingWork()
      yield* lease(slow.streamId, live)
      const unclaimed = yield* pendingWork()
      const fresh = yield* pendingWork({ ageSeconds: 1 })
      const advancing = yield* pendingWork()
      yield* cursor(advancing.streamId, { processedAgo: 2 })

      const stuck = yield* PgWatchdog.diagnose(watchdog)
      const byStream = new Map(stuck.map((s) => [s.streamId, s]))
      expect(byStream.get(locked.streamId)?.reason).toMatchObject({ _tag: "StreamLocked", instanceId: live, lockReason: "rewind" })
      expect(byStream.get(deadLease.streamId)?.reason).toMatchObject({ _tag: "LeaseHeldByDeadInstance", instanceId: dead })
      expect((byStream.get(deadLease.streamId)?.reason as { heartbeatAgeSeconds: number }).heartbeatAgeSeconds).toBeGreaterThan(590)
      expect(byStream.get(ghostLease.streamId)?.reason).toMatchObject({
        _tag: "LeaseHeldByDeadInstance",
        instanceId: ghost,
        heartbeatAgeSeconds: null
      })
      const failingReason = byStream.get(failing.streamId)?.reason as Extract<PgWatchdog.Reason, { _tag: "FailingEvent" }>
      expect(failingReason).toMatchObject({ _tag: "FailingEvent", eventId: failing.eventId, attempts: 2, error: "audit rejected" })
      expect(new Date(failingReason.backoffUntil!).getTime()).toBeGreaterThan(Date.now() + 30_000)
      expect(byStream.get(failing.streamId)?.message).toMatch(/failed 2 time\(s\), retry after .*: audit rejected/)
      expect(byStream.get(rewinding.streamId)?.reason._tag).toBe("RewindPending")
      expect(byStream.get(slow.streamId)?.reason).toMatchObject({ _tag: "LeaseHeldByLiveInstance", instanceId: live })
      expect(byStream.get(unclaimed.streamId)?.reason).toEqual({ _tag: "NotClaimed", liveInstances: 1 })
      expect(byStream.has(fresh.streamId)).toBe(false)
      expect(byStream.has(advancing.streamId)).toBe(false)
      expect(stuck).toHaveLength(7)
    })
  )

  it.effect("status: the snapshot carries the watchdog's findings, the locks and the instances", () =>
    Effect.gen(function* () {
      yield* clear
      const live = yield* instance(3)
      const locked = yield* pendingWork()
      yield* cursor(locked.streamId, { lockInstance: live })
      const snapshot = yield* PgStatus.snapshot({ watchdog })
      expect(snapshot.schema).toBe("watchdog")
      expect(snapshot.stuck.map((s) => s.reason._tag)).toEqual(["StreamLocked"])
      expect(snapshot.locks).toMatchObject([
        { streamId: locked.streamId, perspective: "balance", instanceId: live, reason: "rewind", expired: false }
      ])
      expect(snapshot.instances[0]!.heartbeatAgeSeconds).toBeGreaterThanOrEqual(3)
      expect(snapshot.perspectives).toMatchObject([{ perspective: "balance", streams: 1, pending: 1, pendingStreams: 1 }])
      expect(snapshot.perspectives[0]!.lagSeconds).toBeGreaterThan(100)
    })
  )
  it.effect("health: turns degraded with reasons (lag, failed cursor, no heartbeat, stuck) and back to healthy", () =>
    Effect.gen(function* () {
      yield* clear
      yield* instance(1)
      const options: PgHealth.Options = { maxLag: Duration.seconds(60), watchdog }
      expect(yield* PgHealth.check(options)).toMatchObject({ status: "healthy", reasons: [] })

      const work = yield* pendingWork({ ageSeconds: 120 })
      yield* cursor(work.streamId, { status: 4 })
      const degraded = yield* PgHealth.check(options)
      expect(degraded.status).toBe("degraded")
      expect(degraded.reasons.map((r) => r.code).sort()).toEqual(["FailedCursors", "Lag", "Stuck"])
      expect(degraded.reasons.find((r) => r.code === "Lag")).toMatchObject({ perspective: "balance" })
      expect(degraded.reasons.find((r) => r.code === "Stuck")!.message).toMatch(/not claimed/)

      yield* seed("delete from wh_perspective_events")
      yield* seed("update wh_perspective_cursors set status = 2")
      expect(yield* PgHealth.check(options)).toMatchObject({ status: "healthy", reasons: [] })

      yield* seed("update wh_service_instances set last_heartbeat_at = now() - interval '5 minutes'")
      const silent = yield* PgHealth.check(options)
      expect(silent.reasons).toMatchObject([{ code: "NoHeartbeat" }])
      expect(yield* PgHealth.check({ ...options, heartbeatMaxAge: null })).toMatchObject({ status: "healthy" })
    })
  )

  it.effect("health: the HTTP handler answers 503 with the JSON reasons when degraded and 200 when healthy", () =>
    Effect.gen(function* () {
      yield* clear
      yield* instance(1)
      const health = yield* PgHealth.PgHealth
      const listener = yield* PgHealth.requestListener.pipe(Effect.provideService(PgHealth.PgHealth, health))
      const server = createServer(listener)
      yield* Effect.acquireRelease(
        Effect.callback<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.sync(() => server.close())
      )
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/health`
      const get = Effect.promise(() => fetch(url).then(async (r) => ({ status: r.status, body: (await r.json()) as PgHealth.Report })))
      const ok = yield* get
      expect(ok).toMatchObject({ status: 200, body: { status: "healthy", reasons: [] } })
      const work = yield* pendingWork()
      yield* cursor(work.streamId, { status: 4 })
      const bad = yield* get
      expect(bad.status).toBe(503)
      expect(bad.body.status).toBe("degraded")
      expect(bad.body.reasons.map((r) => r.code)).toContain("FailedCursors")
      yield* clear
      yield* instance(1)
      expect((yield* get).status).toBe(200)
    }).pipe(Effect.scoped, Effect.provide(PgHealth.layer({ watchdog })))
  )
})
