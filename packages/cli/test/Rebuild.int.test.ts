// `whizbang rebuild` checks what it is asked against what the service registered (`wh_perspective_versions`) before
// it writes anything, and says what it will empty before it asks. The registry is set up directly (no worker runs),
// so each refusal is exact; the in-place rebuild applied by a running pipeline is in Pipeline.int.test.ts.
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { PgClient, PgPerspectiveVersions } from "@whizbang/postgres"
import { PgTestDatabase, TestDatabase } from "@whizbang/testing"
import { Effect } from "effect"
import * as Rewind from "../src/Rewind.js"
import { runInProcess } from "./fixtures/runInProcess.js"

const sql = (text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<Record<string, unknown>>(text, params))

const declared = (baseName: string, version: number, eventTypes: ReadonlyArray<string>): PgPerspectiveVersions.Declared => ({
  name: version === 1 ? baseName : `${baseName}__v${version}`,
  baseName,
  version,
  eventTypes
})
const customerStats = [declared("customer_stats", 1, ["CustomerRegistered", "CustomerCharged"])]
const orderTotal = declared("order_total", 1, ["ItemAdded", "OrderPaid"])

const append = (streamId: string, version: number, type: string) =>
  sql(`insert into wh_events (event_id, stream_id, stream_version, event_type, payload) values (gen_random_uuid(), $1, $2, $3, '{}')`, [
    streamId,
    version,
    type
  ])

/** Two customers (three events each) with their rows and cursors, and an order (two events). */
const shop = Effect.gen(function* () {
  yield* PgPerspectiveVersions.register([...customerStats, orderTotal])
  const customers = [randomUUID(), randomUUID()]
  for (const c of customers) {
    yield* append(c, 1, "CustomerRegistered")
    yield* append(c, 2, "CustomerCharged")
    yield* append(c, 3, "CustomerCharged")
    yield* sql(`insert into wh_per_customer_stats__v1 (id, data) values ($1, '{"totalSpent": 42}')`, [c])
    yield* sql(`insert into wh_perspective_cursors (stream_id, perspective_name, status) values ($1, 'customer_stats', 2)`, [c])
  }
  const order = randomUUID()
  yield* append(order, 1, "ItemAdded")
  yield* append(order, 2, "ItemAdded")
  return { customers, order }
})

/** Everything a rebuild writes, counted. */
const written = sql(
  `select (select count(*)::int from wh_perspective_events) as work, (select count(*)::int from wh_perspective_cursors) as cursors,
          (select count(*)::int from wh_per_customer_stats__v1) as rows, (select count(*)::int from wh_active_streams) as leases`
)

const database = PgTestDatabase.layer({ schema: "shop", maxConnections: 4 })

/** The CLI in this process against the test database. */
const run = (...args: ReadonlyArray<string>) =>
  Effect.flatMap(Effect.service(TestDatabase.TestDatabase), ({ url }) => runInProcess(["--database-url", url, "--schema", "shop", ...args]))

describe("whizbang rebuild", () => {
  it.effect("its help says it is a repair in place, and that a zero-downtime rebuild is a new perspective version", () =>
    Effect.gen(function* () {
      const help = yield* runInProcess(["rebuild", "--help"])
      expect(help.code).toBe(0)
      const text = help.stdout.replaceAll(/\s+/g, " ")
      expect(text).toContain("Repair a read model in place")
      expect(text).toContain("to change a perspective's logic or shape with no downtime, declare a new version of it instead")
      expect(text).toContain("A base name means its live version, <base>__v<N> that version")
    })
  )

  it.live(
    "refuses an unknown perspective, an unknown event type and a type the perspective does not handle, naming what is registered, writing nothing",
    () =>
      Effect.gen(function* () {
        yield* shop
        const before = yield* written

        const perspective = yield* run("rebuild", "customer_stat", "-t", "CustomerCharged", "--yes")
        expect(perspective.code).toBe(3)
        expect(perspective.stderr).toBe('whizbang: unknown perspective "customer_stat"; registered: customer_stats, order_total\n')
        const perspectiveJson = yield* run("rebuild", "customer_stat", "--yes", "--json")
        expect(perspectiveJson.json()).toMatchObject({ error: { reason: "NotFound" } })

        const unknownType = yield* run("rebuild", "customer_stats", "-t", "CustomerCharge", "--yes")
        expect(unknownType.code).toBe(2)
        expect(unknownType.stderr).toBe(
          'whizbang: unknown event type "CustomerCharge": no registered perspective handles it; customer_stats handles: CustomerCharged, CustomerRegistered\n'
        )
        const unhandled = yield* run("rebuild", "customer_stats", "-t", "CustomerCharged", "-t", "ItemAdded", "--yes")
        expect(unhandled.code).toBe(2)
        expect(unhandled.stderr).toBe(
          'whizbang: customer_stats does not handle "ItemAdded" (order_total does); customer_stats handles: CustomerCharged, CustomerRegistered\n'
        )
        expect(yield* written).toEqual(before)

        // The same checks through the API, as typed errors.
        const api = yield* Effect.flip(Rewind.rebuild({ perspective: "customer_stat" }))
        expect(api.reason).toMatchObject({ _tag: "NotFound", what: "perspective", id: "customer_stat" })
        const apiType = yield* Effect.flip(Rewind.rebuild({ perspective: "customer_stats", eventTypes: ["ItemAdded"] }))
        expect(apiType.reason).toMatchObject({ _tag: "InvalidInput", option: "event-type" })
        expect(yield* written).toEqual(before)
      }).pipe(Effect.provide(database)),
    60_000
  )

  it.live(
    "without -t rebuilds from every type the perspective handles, after saying what it will empty and re-enqueue",
    () =>
      Effect.gen(function* () {
        const { customers } = yield* shop
        const before = yield* written
        const plan =
          "rebuild customer_stats in place: empties 2 row(s) of wh_per_customer_stats__v1 and resets 2 stream(s) (cursors, snapshots, " +
          "0 pending work row(s)), then plans 6 event(s) of CustomerCharged, CustomerRegistered for the replay of the instances " +
          "that run it; reads miss the emptied rows until they are replayed"

        // Without a terminal to ask on and without --yes: the plan, and a refusal.
        const asked = yield* run("rebuild", "customer_stats")
        expect(asked.code).toBe(4)
        expect(asked.stderr).toBe(`whizbang: ${plan}. Continue? — refusing without a terminal to confirm on; pass --yes\n`)
        const dry = yield* run("rebuild", "customer_stats", "--dry-run", "--json")
        expect(dry.code).toBe(0)
        expect(dry.json()).toEqual({
          perspective: "customer_stats",
          baseName: "customer_stats",
          version: 1,
          eventTypes: ["CustomerCharged", "CustomerRegistered"],
          table: "wh_per_customer_stats__v1",
          rows: 2,
          streams: 2,
          pendingWork: 0,
          events: 6,
          via: "replay"
        })
        expect(yield* written).toEqual(before)

        const rebuilt = yield* run("rebuild", "customer_stats", "--yes")
        expect(rebuilt.code).toBe(0)
        expect(rebuilt.stdout).toBe(
          "rebuilding customer_stats: 2 stream(s) reset, 6 event(s) planned for replay (whizbang perspectives shows its progress)\n"
        )
        expect(rebuilt.stderr).toContain(plan)
        expect(yield* sql("select count(*)::int as n from wh_per_customer_stats")).toEqual([{ n: 0 }])
        // The history is planned for the replay (each stream through its newest event), no work row per event.
        expect(yield* sql("select count(*)::int as n from wh_perspective_events")).toEqual([{ n: 0 }])
        expect(
          yield* sql(
            `select b.stream_id::text, b.through_event_id = (select e.event_id from wh_events e where e.stream_id = b.stream_id
               order by e.event_id desc limit 1) as newest
             from wh_perspective_backfill b where b.perspective_name = 'customer_stats' order by 1`
          )
        ).toEqual([...customers].sort().map((c) => ({ stream_id: c, newest: true })))
        expect(
          yield* sql(
            "select backfill_streams, backfill_events::int, replay_started_at from wh_perspective_versions where perspective_name = 'customer_stats'"
          )
        ).toEqual([{ backfill_streams: 2, backfill_events: 6, replay_started_at: null }])

        // -t is checked, then narrows the rebuild to those types, as work rows.
        const narrowed = yield* run("rebuild", "customer_stats", "-t", "CustomerCharged", "--stream", customers[0]!, "--yes", "--json")
        expect(narrowed.json()).toEqual({ perspective: "customer_stats", streams: 1, enqueued: 2 })
        expect(
          yield* sql(
            `select e.event_type, count(*)::int as n from wh_perspective_events w join wh_events e using (event_id)
             where w.perspective_name = 'customer_stats' group by 1 order by 1`
          )
        ).toEqual([{ event_type: "CustomerCharged", n: 2 }])
      }).pipe(Effect.provide(database)),
    60_000
  )

  it.live(
    "a base name means the live version; a version's key names that version; one building, ready or retired is refused",
    () =>
      Effect.gen(function* () {
        yield* shop
        yield* PgPerspectiveVersions.register([...customerStats, declared("customer_stats", 2, ["CustomerRegistered", "CustomerCharged"])])
        const target = (...args: ReadonlyArray<string>) =>
          Effect.map(run("rebuild", ...args, "--dry-run", "--json"), (r) => ({ code: r.code, ...(r.code === 0 ? r.json() : {}) }))

        expect(yield* target("customer_stats")).toMatchObject({
          code: 0,
          perspective: "customer_stats",
          table: "wh_per_customer_stats__v1"
        })
        const building = yield* run("rebuild", "customer_stats__v2", "--yes")
        expect(building.code).toBe(4)
        expect(building.stderr).toMatch(/^whizbang: customer_stats__v2 is building: its history is being replayed/)

        // v2 catches up and goes live: the base name now means v2; v1 (retiring) is still reachable by its key.
        yield* sql("delete from wh_perspective_backfill")
        yield* sql("delete from wh_perspective_events")
        yield* PgPerspectiveVersions.cutover("customer_stats", 2, {})
        expect(yield* target("customer_stats")).toMatchObject({
          code: 0,
          perspective: "customer_stats__v2",
          version: 2,
          table: "wh_per_customer_stats__v2",
          rows: 0
        })
        expect(yield* target("customer_stats__v1")).toMatchObject({ code: 0, perspective: "customer_stats", version: 1, rows: 2 })

        yield* sql("update wh_perspective_versions set state = 'retired' where perspective_name = 'customer_stats'")
        const retired = yield* run("rebuild", "customer_stats__v1", "--yes")
        expect(retired.code).toBe(4)
        expect(retired.stderr).toMatch(/^whizbang: customer_stats is retired: nothing routes or applies its work/)
        const unknown = yield* run("rebuild", "customer_stats__v3", "--yes")
        expect(unknown.code).toBe(3)
        expect(unknown.stderr).toBe('whizbang: unknown perspective "customer_stats__v3"; registered: customer_stats__v2, order_total\n')
      }).pipe(Effect.provide(database)),
    60_000
  )
})
