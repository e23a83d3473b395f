// Many tenants through the front door (issue #39): one service schema with 50 tenant schemas, two worker processes of
// `Whizbang.layerTenants` serving all of them, the test process writing as a write-only tenant service
// (`tenants.serve: []`, as the README composes a process whose workers run elsewhere). Concurrent appenders pick
// random tenants; during the run a tenant is added and one removed; every tenant also builds version 2 of balance.
// Then: every tenant's read models equal their SQL folds, every event is in the tenant it was appended for (0
// cross-tenant rows), none lost or doubled; hostile ids are refused and write nothing.
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Effect, Layer, Ref } from "effect"
import { EventId, EventStore, PgClient, Tenants, Whizbang } from "whizbang"
import * as Domain from "./support/domain.js"
import * as TenantWorkers from "./support/tenantWorkers.js"
import * as Writer from "./support/writer.js"

const schema = "saas"

const writer = (url: string) =>
  Layer.unwrap(
    Effect.map(Domain.definitions, ({ events, perspectives, balanceV2 }) =>
      Whizbang.layerTenants({
        databaseUrl: url,
        schema,
        serviceName: "acceptance-tenant-writer",
        events,
        perspectives: [...perspectives, balanceV2],
        options: Domain.options,
        watchdog: { interval: null },
        tenants: { serve: [] }
      })
    )
  )

const tenantIds = Array.from({ length: 50 }, (_, i) => `t${String(i + 1).padStart(2, "0")}`)

/** Deterministic pseudo-random numbers (a linear congruential generator). */
const random = (seed: number) => {
  let state = seed >>> 0
  return (below: number) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    return state % below
  }
}

const inTenant = <A, E, R>(tenantId: string, effect: Effect.Effect<A, E, R>) => Tenants.run(tenantId, effect)

describe("many tenants through the front door", () => {
  it.live(
    "50 tenants, 2 worker processes, concurrent appenders on random tenants, one added and one removed mid-run, version 2 built in every tenant: folds exact, 0 cross-tenant, 0 lost or doubled",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { url } = yield* TestDatabase.TestDatabase
          yield* Effect.gen(function* () {
            const { catalog } = yield* Tenants.Tenants
            // Added as the README adds them: schema, migrations, and this service's perspectives laid out.
            yield* Effect.forEach(tenantIds, (id) => Tenants.add(id), { concurrency: 4, discard: true })
            const workers = yield* Effect.forEach([1, 2], () => TenantWorkers.start({ url, schema, version2: true }))

            // Appended per tenant (confirmed by the store), and the live set appenders draw from.
            const appended = yield* Ref.make(new Map<string, number>())
            const live = yield* Ref.make([...tenantIds])
            const streamsOf = new Map<string, ReadonlyArray<string>>()
            const streams = (tenantId: string) => {
              let ids = streamsOf.get(tenantId)
              if (ids === undefined) {
                ids = Writer.streams(3)
                streamsOf.set(tenantId, ids)
              }
              return ids
            }
            const appender = (seed: number) =>
              Effect.gen(function* () {
                const next = random(seed)
                for (let i = 0; i < 60; i++) {
                  const tenants = yield* Ref.get(live)
                  const tenantId = tenants[next(tenants.length)]!
                  const accountId = streams(tenantId)[next(3)]!
                  const count = 1 + next(3)
                  const events = Array.from({ length: count }, (_, k) => {
                    // The tag names the tenant: an event read in another tenant's schema would show.
                    const payload = { accountId, amount: 1 + next(50), tag: `${tenantId}.${seed}.${i}.${k}` }
                    return next(4) === 0 ? Domain.Withdrawn.make(payload) : Domain.Deposited.make(payload)
                  })
                  yield* inTenant(
                    tenantId,
                    Effect.flatMap(EventStore.EventStore, (store) => store.append(accountId, events))
                  )
                  yield* Ref.update(appended, (m) => new Map(m).set(tenantId, (m.get(tenantId) ?? 0) + count))
                }
              })

            const changes = Effect.gen(function* () {
              // Mid-run: t50 leaves the live set (its appends so far stay counted, and are dropped with it), then is
              // removed; t51 is added and joins the live set.
              yield* Ref.update(live, (ids) => ids.filter((id) => id !== "t50"))
              yield* catalog.remove("t50", { confirm: "t50" })
              yield* Tenants.add("t51")
              yield* Ref.update(live, (ids) => [...ids, "t51"])
            })
            yield* Effect.all([Effect.forEach([1, 2, 3, 4], appender, { concurrency: "unbounded", discard: true }), changes], {
              concurrency: "unbounded"
            })
            const liveTenants = yield* Ref.get(live)
            expect(liveTenants).toContain("t51")
            expect(liveTenants).not.toContain("t50")
            const pending = Effect.map(
              Effect.forEach(liveTenants, (id) =>
                inTenant(
                  id,
                  Effect.flatMap(PgClient.PgClient, (client) =>
                    client.query<{ n: number }>(
                      "SELECT ((SELECT count(*) FROM wh_perspective_events) + (SELECT count(*) FROM wh_perspective_versions WHERE state = 'building'))::int AS n"
                    )
                  )
                )
              ),
              (rows) => rows.reduce((sum, r) => sum + r[0]!.n, 0)
            )
            // Settled when no tenant has work or a version building. A version build goes round every 5 s in a
            // tenant's services (the tenants' default), so this waits by the clock: at most 3 minutes.
            const deadline = Date.now() + 180_000
            while ((yield* pending) > 0) {
              if (Date.now() > deadline) {
                const detail = yield* Effect.forEach(liveTenants, (id) =>
                  inTenant(
                    id,
                    Effect.flatMap(PgClient.PgClient, (client) =>
                      client.query(
                        "SELECT $1::text AS tenant, (SELECT count(*) FROM wh_perspective_events)::int AS work, (SELECT string_agg(perspective_name || ':' || state, ',') FROM wh_perspective_versions) AS versions",
                        [id]
                      )
                    )
                  )
                )
                return yield* Effect.fail(
                  new Error(
                    `work still pending: ${JSON.stringify(detail.flat().filter((r) => JSON.stringify(r).includes("building") || (r as { work: number }).work > 0))}`
                  )
                )
              }
              yield* Effect.forEach(workers, (w) => w.awaitIdle)
              // Idle workers answer at once: between rounds, the next check waits for the version builds' round.
              yield* Effect.sleep("250 millis")
            }
            const counts = yield* Ref.get(appended)
            const problems: Array<string> = []
            for (const id of liveTenants) {
              const report = yield* inTenant(
                id,
                Effect.gen(function* () {
                  const client = yield* PgClient.PgClient
                  const [row] = yield* client.query<{ events: number; foreign: number; dead: number }>(
                    `SELECT (SELECT count(*) FROM wh_events)::int AS events,
                            (SELECT count(*) FROM wh_events WHERE split_part(payload->>'tag', '.', 1) <> $1)::int AS foreign,
                            (SELECT count(*) FROM wh_dead_letters)::int AS dead`,
                    [id]
                  )
                  return {
                    ...row!,
                    balance: yield* Writer.mismatches("balance"),
                    activity: yield* Writer.mismatches("activity"),
                    v2: yield* Writer.mismatches("balance__v2")
                  }
                })
              )
              const expected = { events: counts.get(id) ?? 0, foreign: 0, dead: 0, balance: 0, activity: 0, v2: 0 }
              if (JSON.stringify(report) !== JSON.stringify(expected))
                problems.push(`${id}: ${JSON.stringify(report)} != ${JSON.stringify(expected)}`)
            }
            expect(problems).toEqual([])
            expect([...counts.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(240)
            // The removed tenant is gone with its schema; the service schema (the default tenant) holds no events.
            const client = yield* PgClient.PgClient
            expect(yield* client.query("SELECT 1 FROM pg_namespace WHERE nspname = 'tenant_t50'")).toEqual([])
            const [own] = yield* client.query<{ n: number }>("SELECT count(*)::int AS n FROM saas.wh_events")
            expect(own!.n).toBe(0)
            // Hostile ids: typed errors, nothing written.
            for (const id of ['x"; DROP SCHEMA saas CASCADE; --', "pg_toast", "é", "t".repeat(64), "tenant_t01"]) {
              const error = yield* Effect.flip(
                inTenant(
                  id,
                  Effect.flatMap(EventStore.EventStore, (s) =>
                    s.append(EventId.unsafeMake(), [Domain.Deposited.make({ accountId: "a", amount: 1, tag: "x" })])
                  )
                )
              )
              expect(error._tag, id).toBe("InvalidTenantId")
            }
          }).pipe(Effect.provide(writer(url)))
        })
      ).pipe(Effect.provide(TestDatabase.layer)),
    240_000
  )
})
