// The Citus tier: the front door on a Citus cluster with schema-based sharding, each service schema a distributed
// schema placed on one worker node. Composed only from `whizbang`, as the README composes it; the only difference
// from plain PostgreSQL is the URL (the coordinator's) and the database's `citus.enable_schema_based_sharding`
// (README, "Outgrowing one database"). Runs when a coordinator with 2 worker nodes answers (WHIZBANG_CITUS_URL, else
// 127.0.0.1:5701, which ../shared/citus/cluster.sh starts); otherwise one line says why it was skipped.
// Sizes are small: the tier checks behaviour on a distributed engine, not throughput (see bench/ for that).
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Option, Schedule } from "effect"
import { EventStore, PgClient, PgPerspectiveVersions, PgTenants, SyncAwareLens, SyncFilter, SyncResult, Tenants, Whizbang } from "whizbang"
import * as Citus from "./support/citus.js"
import * as Domain from "./support/domain.js"
import * as Readers from "./support/readers.js"
import * as TenantWorkers from "./support/tenantWorkers.js"
import * as Workers from "./support/workers.js"
import * as Writer from "./support/writer.js"

const skipped = await Citus.unavailable()
if (skipped !== undefined) console.log(`Citus tier skipped: ${skipped}`)

const url = Citus.url

/** A write-only tenant service (its workers run in the tenant worker processes) on the coordinator. */
const tenantService = (schema: string) =>
  Layer.unwrap(
    Effect.map(Domain.definitions, ({ events, perspectives }) =>
      Whizbang.layerTenants({
        databaseUrl: url,
        schema,
        events,
        perspectives,
        options: Domain.options,
        watchdog: { interval: null },
        tenants: { serve: [] }
      })
    )
  )

/** Migrates the schemas through the front door (each becomes a distributed schema), then spreads them over both worker nodes. */
const prepare = (schemas: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    yield* Citus.enableSchemaSharding
    yield* Effect.forEach(schemas, (schema) => Effect.provide(Effect.void, Writer.layer(url, schema)), { discard: true })
    return yield* Citus.spread(schemas)
  })

describe.skipIf(skipped !== undefined)("the front door on Citus", () => {
  it.live(
    "(a) 4 service schemas on both worker nodes, each with 3 concurrent appenders over 30 shared streams, 2 worker processes and a reader process: every fold exact, nothing left, read-your-writes across processes never stale",
    () =>
      Effect.gen(function* () {
        const schemas = yield* Citus.schemas("citus_a", 4)
        const placed = yield* prepare(schemas)
        const started = Date.now()
        const results = yield* Effect.forEach(
          schemas,
          (schema) =>
            Effect.gen(function* () {
              const workers = [yield* Workers.start({ url, schema }), yield* Workers.start({ url, schema })]
              const reader = yield* Readers.start({ url, schema })
              const streamIds = Writer.streams(30)
              const appended = yield* Writer.appendConcurrently({ streamIds, appenders: 3, perAppender: 100, batch: 5 })
              const store = yield* EventStore.EventStore
              // Read-your-writes across processes: this process appends, the reader process (its tracker never saw the
              // append) waits with SyncFilter.forStream and reads.
              const reads = yield* Effect.forEach(
                Array.from({ length: 30 }, (_, i) => i),
                (i) =>
                  Effect.gen(function* () {
                    const accountId = streamIds[i]!
                    const r = yield* store.append(accountId, [Domain.Deposited.make({ accountId, amount: 1, tag: `ryw${i}` })])
                    return { ...(yield* reader.read(accountId)), appended: r.events[0]!.streamVersion }
                  }),
                { concurrency: 4 }
              )
              yield* Workers.settle(
                workers,
                Effect.map(Writer.counts, (c) => c.work)
              )
              return {
                schema,
                appended: appended + reads.length,
                notFresh: reads.filter((r) => r.outcome !== "Synced" && r.outcome !== "NoPendingEvents").length,
                stale: reads.filter((r) => r.version < r.appended).length,
                counts: yield* Writer.counts,
                balance: yield* Writer.mismatches("balance"),
                activity: yield* Writer.mismatches("activity")
              }
            }).pipe(Effect.provide(Writer.layer(url, schema)), Effect.scoped),
          // Two schemas at a time (one on each worker node): 3 processes each on a 2-core machine.
          { concurrency: 2 }
        )
        console.log(
          `citus (a): ${schemas.length} schemas on worker ports ${placed.map((p) => p.port).join(", ")}, ${results.reduce((n, r) => n + r.appended, 0)} events, settled after ${Date.now() - started} ms`
        )
        expect(new Set(placed.map((p) => p.port)).size).toBe(2)
        for (const r of results) {
          expect(r.counts, r.schema).toEqual({ events: 330, work: 0, dead_letters: 0 })
          expect(r.balance, r.schema).toBe(0)
          expect(r.activity, r.schema).toBe(0)
          expect(r.notFresh, r.schema).toBe(0)
          expect(r.stale, r.schema).toBe(0)
        }
      }).pipe(Effect.scoped),
    420_000
  )

  it.live(
    "(b) a perspective version cutover on a distributed schema: v2 rebuilt from history beside v1 under appends, cut over automatically, equals the fold; reads after it are fresh",
    () =>
      Effect.gen(function* () {
        const [schema] = (yield* Citus.schemas("citus_b", 1)) as [string]
        yield* prepare([schema])
        const result = yield* Effect.gen(function* () {
          const old = yield* Workers.start({ url, schema, perspectives: ["balance", "activity"] })
          const streamIds = Writer.streams(30)
          yield* Writer.appendConcurrently({ streamIds, appenders: 2, perAppender: 150, batch: 5 })
          const live = yield* Effect.forkChild(Writer.appendConcurrently({ streamIds, appenders: 2, perAppender: 50, batch: 1 }))
          const deploy = yield* Workers.start({ url, schema, perspectives: ["balance", "activity", "balance__v2"] })
          const cutAt = yield* Effect.map(PgPerspectiveVersions.list, (vs) =>
            vs.find((v) => v.baseName === "balance" && v.state === "live")
          ).pipe(
            Effect.repeat({ until: (v) => v?.perspectiveName === "balance__v2", schedule: Schedule.spaced("50 millis"), times: 2_400 })
          )
          yield* Fiber.join(live)
          yield* Workers.settle(
            [old, deploy],
            Effect.map(Writer.counts, (c) => c.work)
          )
          const { balance } = yield* Domain.definitions
          const accountId = streamIds[0]!
          yield* EventStore.append(accountId, [Domain.Deposited.make({ accountId, amount: 1, tag: "after" })])
          const after = yield* SyncAwareLens.getById(balance, accountId, SyncFilter.forStream(accountId).withTimeout(Duration.seconds(20)))
          return {
            cutAt: cutAt?.perspectiveName,
            fresh: SyncResult.isFresh(after.sync),
            trailEnd: Option.map(after.row, (r) => r.data.trail.split(",").at(-1)),
            counts: yield* Writer.counts,
            balanceV2: yield* Writer.mismatches("balance__v2"),
            activity: yield* Writer.mismatches("activity")
          }
        }).pipe(Effect.provide(Writer.layer(url, schema)))
        expect(result.cutAt).toBe("balance__v2")
        expect(result.counts).toEqual({ events: 401, work: 0, dead_letters: 0 })
        expect(result.balanceV2).toBe(0)
        expect(result.activity).toBe(0)
        expect(result.fresh).toBe(true)
        expect(result.trailEnd).toEqual(Option.some("after"))
      }).pipe(Effect.scoped),
    300_000
  )

  // The move is `PgTenants.move`, which blocks the schema's writes while it copies (`block_writes`): with Citus
  // 13.2.2's online mode (`force_logical`) this test failed in 4 of 35 runs, an acknowledged append missing from the
  // schema in the failing runs examined (README, "Outgrowing one database"); plain INSERTs from pgbench lost rows too.
  it.live(
    "(c) a service schema moved to the other worker node (PgTenants.move: citus_schema_move, writes blocked while copied) while appends, read-your-writes and 2 worker processes run: 0 lost, 0 doubled, every fold exact; the pause measured",
    () =>
      Effect.gen(function* () {
        const schemas = yield* Citus.schemas("citus_c", 2)
        const placed = yield* prepare(schemas)
        const [schema] = schemas as [string]
        const from = placed.find((p) => p.schema === schema)!.port
        const to = placed.find((p) => p.schema !== schema)!.port
        const result = yield* Effect.gen(function* () {
          const workers = [yield* Workers.start({ url, schema }), yield* Workers.start({ url, schema })]
          const { balance } = yield* Domain.definitions
          const streamIds = Writer.streams(20)
          // Each loop: append one deposit, wait until balance applied it, read it back; every latency recorded with
          // its start time, so the pause the schema saw during the move shows as the slowest round trips.
          let running = true
          const rounds: Array<{ at: number; millis: number; ok: boolean; eventId: string; sync: string }> = []
          const loops = yield* Effect.forkChild(
            Effect.forEach(
              [0, 1, 2, 3],
              (loop) =>
                Effect.gen(function* () {
                  let i = 0
                  while (running) {
                    const accountId = streamIds[(loop * 5 + (i % 5)) % streamIds.length]!
                    const at = Date.now()
                    const appended = yield* EventStore.append(accountId, [
                      Domain.Deposited.make({ accountId, amount: 1, tag: `m${loop}.${i}` })
                    ])
                    const { row, sync } = yield* SyncAwareLens.getById(
                      balance,
                      accountId,
                      SyncFilter.forStream(accountId).withTimeout(Duration.seconds(60))
                    )
                    const version = Option.match(row, { onNone: () => 0, onSome: (r) => r.version })
                    rounds.push({
                      at,
                      millis: Date.now() - at,
                      ok: SyncResult.isFresh(sync) && version >= appended.events[0]!.streamVersion,
                      eventId: appended.events[0]!.eventId,
                      sync: sync._tag
                    })
                    i++
                  }
                }),
              { concurrency: "unbounded", discard: true }
            )
          )
          // Let the loops run before, during and after the move.
          yield* Effect.repeat(
            Effect.sync(() => rounds.length),
            { until: (n) => n >= 40, schedule: Schedule.spaced("20 millis") }
          )
          // Through the product: `PgTenants.move` (`whizbang tenants move`), the service's schema being its default
          // tenant. A move to the node it is on does nothing; to the coordinator (no shards) it is refused.
          const tenants = yield* Effect.provide(Effect.service(PgTenants.PgTenants), PgTenants.layer())
          const host = yield* Citus.hostOf(to)
          const stay = yield* tenants.move("default", { host, port: from })
          const refused = yield* Effect.flip(tenants.move("default", { host, port: Citus.coordinatorPort }))
          const moveStarted = Date.now()
          const moved = yield* tenants.move("default", { host, port: to })
          const moveEnded = Date.now()
          const before = rounds.length
          yield* Effect.repeat(
            Effect.sync(() => rounds.length),
            { until: (n) => n >= before + 40, schedule: Schedule.spaced("20 millis") }
          )
          running = false
          yield* Fiber.join(loops)
          yield* Workers.settle(
            workers,
            Effect.map(Writer.counts, (c) => c.work)
          )
          const during = rounds.filter((r) => r.at + r.millis >= moveStarted && r.at <= moveEnded)
          const outside = rounds
            .filter((r) => r.at + r.millis < moveStarted || r.at > moveEnded)
            .map((r) => r.millis)
            .sort((a, b) => a - b)
          return {
            rounds: rounds.length,
            notOk: rounds.filter((r) => !r.ok).length,
            // Acknowledged appends missing from the schema afterwards (lost by the move).
            lost: yield* Writer.missingEvents(rounds.map((r) => r.eventId)),
            slow: rounds
              .filter((r) => r.millis > 5_000)
              .map(({ at, millis, eventId, sync }) => ({ at: new Date(at).toISOString(), millis, eventId, sync })),
            moveMillis: moveEnded - moveStarted,
            pause: Math.max(0, ...during.map((r) => r.millis)),
            usual: outside[Math.floor(outside.length / 2)] ?? 0,
            placedAfter: (yield* Citus.placements([schema]))[0]?.port,
            stay,
            refused,
            moved,
            counts: yield* Writer.counts,
            doubled: yield* Writer.doubledTags,
            balance: yield* Writer.mismatches("balance"),
            activity: yield* Writer.mismatches("activity")
          }
        }).pipe(Effect.provide(Writer.layer(url, schema)))
        console.log(
          `citus (c): ${result.rounds} append-wait-read rounds; citus_schema_move ${from} -> ${to} took ${result.moveMillis} ms; ` +
            `slowest round during it ${result.pause} ms (median outside it ${result.usual} ms)`
        )
        if (result.slow.length > 0) console.log(`citus (c): rounds over 5 s: ${JSON.stringify(result.slow)}`)
        expect(result.stay).toMatchObject({ moved: false, from: { port: from }, to: { port: from } })
        expect(result.refused).toMatchObject({ _tag: "TenantMoveRefused", reason: "unknownNode" })
        expect(result.moved).toMatchObject({ tenantId: "default", schema, moved: true, from: { port: from }, to: { port: to } })
        expect(result.placedAfter).toBe(to)
        expect(result.lost).toBe(0)
        expect(result.notOk).toBe(0)
        // 0 lost: every append that returned is stored and applied; 0 doubled: no tag twice, every fold exact.
        expect(result.counts).toEqual({ events: result.rounds, work: 0, dead_letters: 0 })
        expect(result.doubled).toBe(0)
        expect(result.balance).toBe(0)
        expect(result.activity).toBe(0)
      }).pipe(Effect.scoped),
    300_000
  )

  it.live(
    "(d) tenants on Citus: 4 tenants of one service placed on both worker nodes, the catalog on the coordinator, 2 tenant worker processes, appenders on random tenants: every tenant's folds exact, 0 events outside their tenant",
    () =>
      Effect.gen(function* () {
        yield* Citus.enableSchemaSharding
        const [service] = yield* Citus.schemas("citus_t", 1)
        const run = service!.split("_")[2]!
        const ids = Array.from({ length: 4 }, (_, i) => `c${run}_${i}`)
        const tenantSchemas = ids.map((id) => `tenant_${id}`)
        // Dropped with the test's scope: the tenants' schemas and the catalog.
        yield* Effect.addFinalizer(() =>
          Effect.forEach([...tenantSchemas, `${service}_tenants`], (name) => Citus.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`), {
            discard: true
          })
        )
        const counts = new Map<string, number>()
        yield* Effect.gen(function* () {
          const { catalog } = yield* Tenants.Tenants
          for (const id of ids) yield* catalog.add(id)
          const placed = yield* Citus.spread(tenantSchemas)
          expect(new Set(placed.map((p) => p.port)).size, "tenants on both worker nodes").toBe(2)
          // The catalog spans tenants: a local schema of the coordinator, never distributed.
          expect(yield* Citus.placements([`${service}_tenants`])).toEqual([])
          const workers = [yield* TenantWorkers.start({ url, schema: service! }), yield* TenantWorkers.start({ url, schema: service! })]
          const streams = new Map(ids.map((id) => [id, Writer.streams(5)] as const))
          yield* Effect.forEach(
            Array.from({ length: 4 }, (_, a) => a),
            (a) =>
              Effect.gen(function* () {
                for (let i = 0; i < 40; i++) {
                  const id = ids[(a * 7 + i * 3) % ids.length]!
                  const accountId = streams.get(id)![(a + i) % 5]!
                  const tag = `${id}.${a}.${i}`
                  yield* Tenants.run(
                    id,
                    Effect.flatMap(EventStore.EventStore, (store) =>
                      store.append(accountId, [Domain.Deposited.make({ accountId, amount: 1 + (i % 7), tag })])
                    )
                  )
                  counts.set(id, (counts.get(id) ?? 0) + 1)
                }
              }),
            { concurrency: 4, discard: true }
          )
          const pending = Effect.map(
            Effect.forEach(ids, (id) =>
              Tenants.run(
                id,
                Effect.map(Writer.counts, (c) => c.work)
              )
            ),
            (works) => works.reduce((a, b) => a + b, 0)
          )
          for (let round = 0; (yield* pending) > 0; round++) {
            if (round > 40) return yield* Effect.fail(new Error(`tenant work still pending on Citus: ${yield* pending}`))
            yield* Effect.forEach(workers, (w) => w.awaitIdle)
          }
          for (const id of ids) {
            const report = yield* Tenants.run(
              id,
              Effect.gen(function* () {
                const [foreign] = yield* Effect.flatMap(PgClient.PgClient, (client) =>
                  client.query<{ n: number }>("SELECT count(*)::int AS n FROM wh_events WHERE split_part(payload->>'tag', '.', 1) <> $1", [
                    id
                  ])
                )
                return {
                  counts: yield* Writer.counts,
                  foreign: foreign!.n,
                  balance: yield* Writer.mismatches("balance"),
                  activity: yield* Writer.mismatches("activity")
                }
              })
            )
            expect(report, id).toEqual({
              counts: { events: counts.get(id), work: 0, dead_letters: 0 },
              foreign: 0,
              balance: 0,
              activity: 0
            })
          }
        }).pipe(Effect.provide(tenantService(service!)))
      }).pipe(Effect.scoped),
    300_000
  )
  it.live(
    "(e) a rolling deploy on distributed schemas on both worker nodes: the old instance (balance only) and the new one (balance and activity) run side by side, then the old one stops; no dead letter, every fold exact",
    () =>
      Effect.gen(function* () {
        const schemas = yield* Citus.schemas("citus_e", 2)
        const placed = yield* prepare(schemas)
        expect(new Set(placed.map((p) => p.port)).size, "schemas on both worker nodes").toBe(2)
        // Few attempts and a short backoff: an instance dead-lettering work it cannot apply would show at once.
        const options = { maxPerspectiveEventAttempts: 2, failureBackoff: { initial: "10 millis", multiplier: 2, max: "50 millis" } }
        const work = Effect.map(Writer.counts, (c) => c.work)
        const results = yield* Effect.forEach(
          schemas,
          (schema) =>
            Effect.gen(function* () {
              const streamIds = Writer.streams(20)
              // The new code writes; only the old instance runs so far.
              const old = yield* Workers.start({ url, schema, perspectives: ["balance"], options })
              yield* Writer.appendConcurrently({ streamIds, appenders: 2, perAppender: 60, batch: 5 })
              yield* old.awaitIdle
              yield* old.awaitIdle
              const beforeNext = { counts: yield* Writer.counts, balance: yield* Writer.mismatches("balance") }
              // The new instance joins while appends go on; then the old one stops (the end of the roll).
              const next = yield* Workers.start({ url, schema, options })
              yield* Writer.appendConcurrently({ streamIds, appenders: 2, perAppender: 30, batch: 3 })
              yield* old.stop
              yield* Writer.appendConcurrently({ streamIds, appenders: 2, perAppender: 30, batch: 3 })
              yield* Workers.settle([next], work)
              return {
                schema,
                deadLettersWhileOld: beforeNext.counts.dead_letters,
                balanceWhileOld: beforeNext.balance,
                counts: yield* Writer.counts,
                balance: yield* Writer.mismatches("balance"),
                activity: yield* Writer.mismatches("activity")
              }
            }).pipe(Effect.provide(Writer.layer(url, schema))),
          { concurrency: 2 }
        )
        for (const r of results) {
          expect(r.deadLettersWhileOld, `${r.schema}: the old instance dead-lettered work of a perspective it does not run`).toBe(0)
          expect(r.balanceWhileOld, r.schema).toBe(0)
          expect(r.counts, r.schema).toEqual({ events: 240, work: 0, dead_letters: 0 })
          expect(r.balance, r.schema).toBe(0)
          expect(r.activity, r.schema).toBe(0)
        }
      }).pipe(Effect.scoped),
    300_000
  )

  it.live("(f) a schema local to the coordinator (created with schema-based sharding off) is refused a move, nothing moved", () =>
    Effect.gen(function* () {
      const [schema] = yield* Citus.schemas("citus_f", 1)
      yield* Citus.query(`SELECT set_config('citus.enable_schema_based_sharding', 'off', false); CREATE SCHEMA "${schema}"`)
      const [node] = yield* Citus.workerPorts
      const host = yield* Citus.hostOf(node!)
      const { placement, refused } = yield* Effect.gen(function* () {
        const tenants = yield* PgTenants.PgTenants
        return {
          placement: yield* tenants.placement("default"),
          refused: yield* Effect.flip(tenants.move("default", { host, port: node! }))
        }
      }).pipe(
        Effect.provide(PgTenants.layer().pipe(Layer.provide(PgClient.layer({ url, schema: schema!, maxConnections: 1 })))),
        Effect.orDie
      )
      expect(Option.isNone(placement)).toBe(true)
      expect(refused).toMatchObject({ _tag: "TenantMoveRefused", reason: "notDistributed", schema })
      expect(yield* Citus.placements([schema!])).toEqual([])
    }).pipe(Effect.scoped)
  )
})
