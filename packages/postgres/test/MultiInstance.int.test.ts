// Several worker instances (distinct instance ids) against one database: registration and heartbeats, spreading,
// fencing of a paused worker, lease renewal, takeover after a kill, no deadlocks under contention, listener
// reconnect, and schema isolation. Every scenario runs on the real clock with its own database.
import { describe, expect } from "@effect/vitest"
import { EventId, EventStore, PerspectiveStore, type WorkCoordinator } from "@whizbang/core"
import { PgClient, PgInstanceRegistry } from "@whizbang/postgres"
import { Deferred, Duration, Effect, Exit, Queue, Ref, Schedule } from "effect"
import * as Bank from "./fixtures/bank.js"
import { type Node, type NodeConfig, startNode } from "./fixtures/instances.js"
import { scenario } from "./fixtures/scenario.js"

const count = (node: Node, sql: string, params: ReadonlyArray<unknown> = []) =>
  node
    .run(Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<{ n: number }>(`select count(*)::int as n from ${sql}`, params)))
    .pipe(
      Effect.map(([r]) => r!.n),
      Effect.orDie
    )

const sql = <Row extends object = Record<string, unknown>>(node: Node, text: string, params: ReadonlyArray<unknown> = []) =>
  node.run(Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<Row>(text, params))).pipe(Effect.orDie)

/** Appends `perStream` deposits of 1..perStream to each stream; returns the expected balance per stream. */
const appendDeposits = (node: Node, streams: ReadonlyArray<string>, perStream: number) =>
  node
    .run(
      Effect.flatMap(Effect.service(EventStore.EventStore), (store) =>
        Effect.forEach(
          streams,
          (id) =>
            store.append(
              id,
              Array.from({ length: perStream }, (_, i) => Bank.Deposited.make({ accountId: id, amount: i + 1 }))
            ),
          { concurrency: 8, discard: true }
        )
      )
    )
    .pipe(Effect.retry({ times: 3 }), Effect.orDie)

/** Every stream's models equal the fold of its events, applied exactly once. */
const expectFolded = (node: Node, streams: ReadonlyArray<string>, perStream: number) =>
  Effect.gen(function* () {
    const models = yield* node.run(Effect.service(PerspectiveStore.PerspectiveStore))
    const balances = yield* Effect.orDie(models.getMany("balance", streams))
    const activities = yield* Effect.orDie(models.getMany("activity", streams))
    const order = Array.from({ length: perStream }, (_, i) => i + 1)
    for (const id of streams) {
      expect(balances.get(id)?.data).toEqual({ balance: (perStream * (perStream + 1)) / 2, audits: 0 })
      expect((activities.get(id)?.data as { order: Array<number> }).order).toEqual(order)
      expect(activities.get(id)?.version).toBe(perStream)
    }
  })

/** Waits until no work row is left, going round every node's idle wait (several owners may share the work). */
const drained = (nodes: ReadonlyArray<Node>) =>
  Effect.gen(function* () {
    for (;;) {
      yield* Effect.forEach(nodes, (n) => n.worker.awaitIdle, { discard: true })
      if ((yield* count(nodes[0]!, "wh_perspective_events")) === 0) return
    }
  })

const newStreams = (n: number) => Array.from({ length: n }, () => EventId.unsafeMake())

/** A coordinator wrapper that holds commits (and, optionally, claims: a frozen process) until released. */
const holding =
  (
    held: Deferred.Deferred<void>,
    release: Deferred.Deferred<void>,
    exits: Ref.Ref<Array<Exit.Exit<void, unknown>>>,
    freezeClaims: boolean
  ) =>
  (inner: WorkCoordinator.Shape): WorkCoordinator.Shape => {
    let holdNext = true
    let frozen = false
    const gate = Effect.suspend(() => (frozen ? Deferred.await(release) : Effect.void))
    return {
      ...inner,
      claimWork: (request) => Effect.andThen(freezeClaims ? gate : Effect.void, inner.claimWork(request)),
      claimAndFetch: (request) => Effect.andThen(freezeClaims ? gate : Effect.void, inner.claimAndFetch!(request)),
      reportCompletions: (completions) =>
        Effect.gen(function* () {
          if (holdNext) {
            frozen = true
            yield* Deferred.succeed(held, undefined)
            yield* Deferred.await(release)
            holdNext = false
            frozen = false
          }
          const exit = yield* Effect.exit(inner.reportCompletions(completions))
          yield* Ref.update(exits, (all) => [...all, exit])
          return yield* exit
        })
    }
  }

describe("many instances on one database", () => {
  scenario(
    "registers, refuses a second process with the same instance id, takes over a stale row and frees its leases, deregisters on stop and frees its own",
    (url) =>
      Effect.gen(function* () {
        const instanceId = EventId.unsafeMake()
        const a = yield* startNode({ url, instanceId })
        expect(yield* count(a, "wh_service_instances where instance_id = $1", [instanceId])).toBe(1)
        const refused = yield* Effect.flip(startNode({ url, instanceId }))
        expect(refused._tag).toBe("DuplicateInstanceError")
        expect(refused.message).toMatch(new RegExp(`instance id ${instanceId} is already in use by process 0 on host "memory"`))
        // The first process is unharmed: it still works.
        const [stream] = newStreams(1)
        yield* appendDeposits(a, [stream!], 3)
        yield* drained([a])
        yield* expectFolded(a, [stream!], 3)

        // A crashed predecessor's row (stale heartbeat) and its leases are taken over.
        const stale = EventId.unsafeMake()
        yield* sql(
          a,
          `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at, metadata)
                     values ($1, 'bank', 'gone', 42, now() - interval '1 hour', '{"bootToken":"old"}')`,
          [stale]
        )
        const lease = (owner: string) =>
          sql(
            a,
            `insert into wh_active_streams (stream_id, instance_id, partition_number, lease_expiry)
                       values ($1, $2, 0, now() + interval '1 hour')`,
            [EventId.unsafeMake(), owner]
          )
        yield* lease(stale)
        const b = yield* startNode({ url, instanceId: stale })
        const [row] = yield* sql<{ host_name: string }>(b, "select host_name from wh_service_instances where instance_id = $1", [stale])
        expect(row!.host_name).toBe("memory")
        expect(yield* count(b, "wh_active_streams where instance_id = $1", [stale])).toBe(0)

        // Stopping deregisters and frees the instance's leases.
        yield* lease(instanceId)
        yield* a.stop
        expect(yield* count(b, "wh_service_instances where instance_id = $1", [instanceId])).toBe(0)
        expect(yield* count(b, "wh_active_streams where instance_id = $1", [instanceId])).toBe(0)
        expect(yield* count(b, "wh_service_instances")).toBe(1)
      })
  )

  scenario("a heartbeat abandons a silent instance: its row and stream leases go, and its streams are processed", (url) =>
    Effect.gen(function* () {
      const a = yield* startNode({ url })
      const ghost = EventId.unsafeMake()
      const streams = newStreams(5)
      // Leases of streams without work: no claim takes them over, so only the beat's release frees them.
      const idle = newStreams(3)
      // The ghost registered, claimed these streams with a long lease, then went silent.
      yield* sql(
        a,
        `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at, metadata)
                     values ($1, 'bank', 'ghost', 7, now() - interval '10 seconds', '{"bootToken":"g"}')`,
        [ghost]
      )
      yield* sql(
        a,
        `insert into wh_active_streams (stream_id, instance_id, partition_number, lease_expiry)
                     select s, $1, 0, now() + interval '1 hour' from unnest($2::uuid[]) s`,
        [ghost, [...streams, ...idle]]
      )
      yield* appendDeposits(a, streams, 2)
      yield* drained([a])
      yield* expectFolded(a, streams, 2)
      yield* a.run(Effect.flatMap(Effect.service(PgInstanceRegistry.PgInstanceRegistry), (r) => Effect.orDie(r.beat)))
      expect(yield* count(a, "wh_service_instances where instance_id = $1", [ghost])).toBe(0)
      expect(yield* count(a, "wh_active_streams")).toBe(0)
    })
  )

  scenario(
    "fencing: a worker paused mid-commit loses its lease, the new owner processes the stream, the paused commit is rejected",
    (url) =>
      Effect.gen(function* () {
        const held = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const exits = yield* Ref.make<Array<Exit.Exit<void, unknown>>>([])
        const a = yield* startNode({
          url,
          wrap: holding(held, release, exits, true),
          options: { abandonStaleInstanceThreshold: Duration.seconds(30) }
        })
        const [stream] = newStreams(1)
        yield* appendDeposits(a, [stream!], 4)
        yield* Deferred.await(held)
        // The pause outlives the lease.
        yield* sql(a, "update wh_active_streams set lease_expiry = now() - interval '1 second' where stream_id = $1", [stream])
        const b = yield* startNode({ url, affinityGrace: 0, options: { abandonStaleInstanceThreshold: Duration.seconds(30) } })
        yield* drained([b])
        expect((yield* b.worker.stats).eventsApplied).toBe(8)
        yield* Deferred.succeed(release, undefined)
        // The paused commit runs now, and is fenced.
        yield* a.worker.awaitIdle
        const [first] = yield* Ref.get(exits)
        expect(Exit.isFailure(first!)).toBe(true)
        expect(String(Exit.isFailure(first!) ? first.cause : "")).toMatch(/lease lost on 1 stream/)
        yield* expectFolded(b, [stream!], 4)
        expect((yield* a.worker.stats).eventsApplied).toBe(0)
        expect(yield* count(b, "wh_perspective_events")).toBe(0)
      })
  )

  scenario("a long apply renews its leases: another instance does not take the stream, and the commit succeeds", (url) =>
    Effect.gen(function* () {
      const held = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const exits = yield* Ref.make<Array<Exit.Exit<void, unknown>>>([])
      const renewals = yield* Ref.make(0)
      const enough = yield* Deferred.make<void>()
      const wrap = (inner: WorkCoordinator.Shape): WorkCoordinator.Shape => {
        const holder = holding(held, release, exits, true)(inner)
        return {
          ...holder,
          renewStreamLeases: (request) =>
            Effect.tap(inner.renewStreamLeases(request), (kept) =>
              kept.length > 0
                ? Effect.flatMap(
                    Ref.updateAndGet(renewals, (n) => n + 1),
                    (n) => (n >= 4 ? Deferred.succeed(enough, undefined) : Effect.void)
                  )
                : Effect.void
            )
        }
      }
      // Lease 1 s, renewed every 333 ms; claims are frozen while the commit is held, so only the renewal keeps it.
      const a = yield* startNode({
        url,
        wrap,
        options: { lease: Duration.seconds(1), abandonStaleInstanceThreshold: Duration.seconds(30) }
      })
      const [stream] = newStreams(1)
      yield* appendDeposits(a, [stream!], 3)
      yield* Deferred.await(held)
      const b = yield* startNode({
        url,
        affinityGrace: 0,
        options: { lease: Duration.seconds(1), abandonStaleInstanceThreshold: Duration.seconds(30) }
      })
      yield* Deferred.await(enough) // > 1 s after the claim: without renewal the lease would have expired
      expect((yield* b.worker.stats).eventsApplied).toBe(0)
      yield* Deferred.succeed(release, undefined)
      yield* drained([a, b])
      const [first] = yield* Ref.get(exits)
      expect(Exit.isSuccess(first!)).toBe(true)
      expect((yield* a.worker.stats).eventsApplied).toBe(6)
      expect((yield* b.worker.stats).eventsApplied).toBe(0)
      yield* expectFolded(a, [stream!], 3)
    })
  )

  scenario("takeover after a kill: another instance takes the dead one's streams within the threshold + one poll", (url) =>
    Effect.gen(function* () {
      const held = yield* Deferred.make<void>()
      const never = yield* Deferred.make<void>()
      const exits = yield* Ref.make<Array<Exit.Exit<void, unknown>>>([])
      // A claims every stream (alone), holds them under a 300 s lease, and is killed: no deregistration.
      const a = yield* startNode({ url, wrap: holding(held, never, exits, false), deregisterOnShutdown: false })
      const streams = newStreams(20)
      yield* appendDeposits(a, streams, 3)
      yield* Deferred.await(held)
      // A holds (some of) the streams under a lease; nothing of the work is committed.
      expect(yield* count(a, "wh_active_streams where instance_id = $1", [a.instanceId])).toBeGreaterThan(0)
      expect(yield* count(a, "wh_perspective_events")).toBe(120)
      const b = yield* startNode({ url })
      const killedAt = Date.now()
      // Killed: its held commit dies with it (a stop would give a report on its way a grace to answer).
      yield* Deferred.die(never, new Error("killed"))
      yield* a.stop
      yield* drained([b])
      const takeover = Date.now() - killedAt
      yield* expectFolded(b, streams, 3)
      // threshold 2 s + poll 100 ms; 700 ms for the processing itself and timer slack.
      expect(takeover).toBeLessThan(2000 + 100 + 700)
      expect((yield* b.worker.stats).eventsApplied).toBe(120)
      console.log(`takeover after kill: ${takeover} ms (threshold 2000 ms, poll 100 ms)`)
    })
  )

  scenario(
    "spreads 300 streams evenly over 3 instances",
    (url) =>
      Effect.gen(function* () {
        const nodes = [yield* startNode({ url }), yield* startNode({ url }), yield* startNode({ url })]
        const streams = newStreams(300)
        yield* appendDeposits(nodes[0]!, streams, 4)
        yield* drained(nodes)
        yield* expectFolded(nodes[0]!, streams, 4)
        const applied = yield* Effect.forEach(nodes, (n) => Effect.map(n.worker.stats, (s) => s.eventsApplied))
        const share = 2400 / 3
        console.log(`events applied per instance: ${applied.join(", ")} (fair share ${share})`)
        expect(applied.reduce((x, y) => x + y, 0)).toBe(2400)
        for (const n of applied) {
          expect(n).toBeGreaterThan(0)
          expect(n).toBeLessThanOrEqual(2 * share)
        }
      }),
    90_000
  )

  scenario(
    "no deadlock (40P01) when 4 instances contend for the same 250 streams",
    (url) =>
      Effect.gen(function* () {
        const deadlocks = yield* Ref.make<Array<string>>([])
        const isDeadlock = (e: unknown) =>
          /deadlock|40P01/i.test(String((e as { cause?: { reason?: { _tag?: string } } }).cause?.reason?._tag ?? "")) ||
          (e as { cause?: { reason?: { _tag?: string } } }).cause?.reason?._tag === "Deadlock"
        const record = <A, E, R>(op: string, eff: Effect.Effect<A, E, R>) =>
          Effect.tapError(eff, (e) => (isDeadlock(e) ? Ref.update(deadlocks, (all) => [...all, op]) : Effect.void))
        const wrap = (inner: WorkCoordinator.Shape): WorkCoordinator.Shape => ({
          claimWork: (r) => record("claimWork", inner.claimWork(r)),
          fetchPendingEvents: (r) => record("fetchPendingEvents", inner.fetchPendingEvents(r)),
          renewLeases: (r) => record("renewLeases", inner.renewLeases(r)),
          renewStreamLeases: (r) => record("renewStreamLeases", inner.renewStreamLeases(r)),
          reportCompletions: (c) => record("reportCompletions", inner.reportCompletions(c)),
          reportFailures: (f) => record("reportFailures", inner.reportFailures(f))
        })
        // Grace 0: every instance claims every stream (no spreading), and short leases force takeovers.
        const config: Omit<NodeConfig, "url"> = { wrap, affinityGrace: 0, options: { lease: Duration.seconds(2), maxStreamsPerBatch: 25 } }
        const nodes = yield* Effect.forEach([1, 2, 3, 4], () => startNode({ url, ...config }))
        const streams = newStreams(250)
        yield* Effect.forEach([0, 1, 2, 3], (round) => appendDeposits(nodes[round]!, streams, 2), { concurrency: 1, discard: true })
        yield* drained(nodes)
        expect(yield* Ref.get(deadlocks)).toEqual([])
        const [stat] = yield* sql<{ deadlocks: string }>(
          nodes[0]!,
          "select deadlocks::text from pg_stat_database where datname = current_database()"
        )
        expect(Number(stat!.deadlocks)).toBe(0)
        const models = yield* nodes[0]!.run(Effect.service(PerspectiveStore.PerspectiveStore))
        const balances = yield* Effect.orDie(models.getMany("balance", streams))
        for (const id of streams) expect(balances.get(id)?.data).toEqual({ balance: 12, audits: 0 })
        const applied = yield* Effect.forEach(nodes, (n) => Effect.map(n.worker.stats, (s) => s.eventsApplied))
        expect(applied.reduce((x, y) => x + y, 0)).toBe(250 * 8 * 2)
      }),
    120_000
  )

  scenario("the NOTIFY listener reconnects after pg_terminate_backend, and the worker survives losing every connection", (url) =>
    Effect.gen(function* () {
      const processed = yield* Queue.unbounded<string>()
      const slow = { pollingInterval: Duration.minutes(1), notifyHealthyPollingInterval: Duration.minutes(1) }
      const a = yield* startNode({
        url,
        options: slow,
        hooks: { onPerspectiveEventProcessed: (g) => Effect.asVoid(Queue.offer(processed, `${g.streamId}:${g.perspectiveName}`)) }
      })
      const listenPids = Effect.map(
        sql<{ pid: number }>(a, "select pid from pg_stat_activity where datname = current_database() and query = 'LISTEN wh_work'"),
        (rows) => rows.map((r) => r.pid)
      )
      // With a 60 s safety-net poll, only a (re)connected listener wakes the worker this fast.
      const appendAndAwait = (within: number) =>
        Effect.gen(function* () {
          const [stream] = newStreams(1)
          const started = Date.now()
          yield* appendDeposits(a, [stream!], 1)
          const seen = new Set<string>()
          while (!(seen.has(`${stream}:balance`) && seen.has(`${stream}:activity`))) seen.add(yield* Queue.take(processed))
          return { stream: stream!, millis: Date.now() - started }
        }).pipe(Effect.timeoutOrElse({ duration: within, orElse: () => Effect.die(new Error(`not processed within ${within} ms`)) }))
      const first = yield* appendAndAwait(10_000)
      const [pid] = yield* listenPids
      expect(pid).toBeDefined()
      yield* sql(a, "select pg_terminate_backend($1)", [pid])
      const second = yield* appendAndAwait(10_000)
      // The wake-up that applied it may come before the new LISTEN shows in pg_stat_activity: wait for it (bounded).
      const pids = yield* listenPids.pipe(
        Effect.repeat({ until: (found) => found.length > 0, schedule: Schedule.spaced(Duration.millis(20)) }),
        Effect.timeoutOrElse({ duration: 5_000, orElse: () => listenPids })
      )
      expect(pids).toHaveLength(1)
      expect(pids[0]).not.toBe(pid)
      // Every connection of the database dies (as in a Postgres restart); the worker recovers on its own.
      yield* sql(a, "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()")
      const third = yield* appendAndAwait(15_000)
      console.log(
        `NOTIFY to processed: ${first.millis} ms; after listener kill ${second.millis} ms; after all connections killed ${third.millis} ms`
      )
      yield* expectFolded(a, [first.stream, second.stream, third.stream], 1)
    })
  )

  scenario("workers are woken after the commit: appends of their own and appends inside a caller's transaction", (url) =>
    Effect.gen(function* () {
      const processed = yield* Queue.unbounded<string>()
      // With a 60 s safety-net poll, only a notification wakes the worker this fast.
      const slow = { pollingInterval: Duration.minutes(1), notifyHealthyPollingInterval: Duration.minutes(1) }
      const worker = yield* startNode({
        url,
        options: slow,
        hooks: { onPerspectiveEventProcessed: (g) => Effect.asVoid(Queue.offer(processed, `${g.streamId}:${g.perspectiveName}`)) }
      })
      // The writer runs no perspective (an old deploy): the registry routes its events to the worker's.
      const writer = yield* startNode({ url, perspectives: [], options: slow })
      // One record for every wait: streams are applied in any order, and a wait must not drop another's.
      const seen = new Set<string>()
      const applied = (stream: string) =>
        Effect.gen(function* () {
          while (!(seen.has(`${stream}:balance`) && seen.has(`${stream}:activity`))) seen.add(yield* Queue.take(processed))
        }).pipe(
          Effect.timeoutOrElse({
            duration: 10_000,
            orElse: () =>
              Effect.flatMap(
                Effect.all([
                  sql(
                    worker,
                    "select perspective_name, fires, processed_at, attempts, instance_id, lease_expiry, scheduled_for, now() from wh_perspective_events where stream_id = $1",
                    [stream]
                  ),
                  sql(worker, "select count(*) from wh_events where stream_id = $1", [stream]),
                  sql(worker, "select * from wh_active_streams where stream_id = $1", [stream]),
                  worker.worker.stats,
                  worker.worker.isIdle
                ]),
                (state) => Effect.die(new Error(`${stream} not processed within 10 s: ${JSON.stringify(state)}`))
              )
          })
        )
      // 20 appends of their own in a burst (one wake-up in flight at a time): every one is applied.
      const burst = newStreams(20)
      yield* writer
        .run(
          Effect.flatMap(Effect.service(EventStore.EventStore), (store) =>
            Effect.forEach(burst, (id) => store.append(id, [Bank.Deposited.make({ accountId: id, amount: 1 })]), {
              concurrency: "unbounded",
              discard: true
            })
          )
        )
        .pipe(Effect.orDie)
      yield* Effect.forEach(burst, applied, { discard: true })
      // Inside a caller's transaction: the work is visible only at its commit, and the wake-up rides in it.
      const [inTx] = newStreams(1)
      yield* writer
        .run(
          Effect.flatMap(Effect.all([Effect.service(EventStore.EventStore), Effect.service(PgClient.PgClient)]), ([store, client]) =>
            client.withTransaction(store.append(inTx!, [Bank.Deposited.make({ accountId: inTx!, amount: 1 })]))
          )
        )
        .pipe(Effect.orDie)
      yield* applied(inTx!)
      yield* expectFolded(worker, [...burst, inTx!], 1)
    })
  )

  scenario("two services in schemas alpha and beta process the same stream ids independently", (url) =>
    Effect.gen(function* () {
      const alpha = yield* startNode({ url, schema: "alpha" })
      const beta = yield* startNode({ url, schema: "beta" })
      const streams = newStreams(10)
      yield* appendDeposits(alpha, streams, 3)
      yield* beta
        .run(
          Effect.flatMap(Effect.service(EventStore.EventStore), (store) =>
            Effect.forEach(streams, (id) => store.append(id, [Bank.Withdrawn.make({ accountId: id, amount: 5 })]), { discard: true })
          )
        )
        .pipe(Effect.orDie)
      yield* drained([alpha])
      yield* drained([beta])
      yield* expectFolded(alpha, streams, 3)
      const models = yield* beta.run(Effect.service(PerspectiveStore.PerspectiveStore))
      const balances = yield* Effect.orDie(models.getMany("balance", streams))
      for (const id of streams) expect(balances.get(id)?.data).toEqual({ balance: -5, audits: 0 })
      expect(yield* count(alpha, "wh_events")).toBe(30)
      expect(yield* count(beta, "wh_events")).toBe(10)
      expect(yield* count(alpha, "beta.wh_per_balance")).toBe(10)
      expect((yield* alpha.worker.stats).eventsApplied).toBe(60)
      expect((yield* beta.worker.stats).eventsApplied).toBe(20)
      expect(yield* count(alpha, "wh_service_instances")).toBe(1)
      expect(yield* count(beta, "wh_service_instances")).toBe(1)
      expect(yield* count(alpha, "alpha.wh_service_instances where instance_id = $1", [beta.instanceId])).toBe(0)
    })
  )
})
