import { describe, expect, layer } from "@effect/vitest"
import { EventId, EventRegistry, EventStore, InstanceProvider, WorkCoordinator } from "@whizbang/core"
import { PgClient, PgEventStore, PgMigrator, PgWorkCoordinator } from "@whizbang/postgres"
import { EventStoreContract, TestDatabase } from "@whizbang/testing"
import { Context, Effect, Exit, Layer, Schema } from "effect"

const pgClient = Layer.unwrap(
  Effect.map(Effect.service(TestDatabase.TestDatabase), ({ url }) => PgClient.layer({ url, schema: "whizbang" }))
).pipe(Layer.provide(TestDatabase.layer), Layer.orDie)

const migrated = Layer.merge(pgClient, PgMigrator.layer.pipe(Layer.provide(pgClient), Layer.orDie))

EventStoreContract.run("postgres", (registry) => PgEventStore.layer({ registry }).pipe(Layer.provideMerge(migrated)))

describe("PgEventStore (Postgres specifics)", () => {
  const registryLayer = Layer.effect(
    EventStore.EventStore,
    Effect.gen(function* () {
      return yield* PgEventStore.make({
        registry: EventStoreContract.registry,
        routing: (type) => (type === "ItemAdded" ? ["cart_summary", "sku_stats"] : [])
      })
    })
  ).pipe(Layer.provideMerge(migrated))

  layer(registryLayer)((it) => {
    it.effect("writes one work row per (event, routed perspective) in the append transaction", () =>
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const client = yield* PgClient.PgClient
        const cartId = EventId.unsafeMake()
        const result = yield* store.append(cartId, [
          EventStoreContract.ItemAdded.make({ cartId, sku: "a", quantity: 1 }),
          EventStoreContract.ItemAdded.make({ cartId, sku: "b", quantity: 1 })
        ])
        const rows = yield* client.query<{ perspective_name: string; event_id: string; partition_number: number }>(
          "select perspective_name, event_id, partition_number from wh_perspective_events where stream_id = $1 order by event_id, perspective_name",
          [cartId]
        )
        const ids = result.events.map((e) => e.eventId)
        expect(rows.map((r) => [r.event_id, r.perspective_name])).toEqual([
          [ids[0], "cart_summary"],
          [ids[0], "sku_stats"],
          [ids[1], "cart_summary"],
          [ids[1], "sku_stats"]
        ])
        expect(new Set(rows.map((r) => r.partition_number)).size).toBe(1)
        expect(rows[0]!.partition_number).toBeGreaterThanOrEqual(0)
        expect(rows[0]!.partition_number).toBeLessThan(10_000)
      })
    )

    it.effect("reports a stored payload that no longer decodes as a typed error", () =>
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const client = yield* PgClient.PgClient
        const cartId = EventId.unsafeMake()
        yield* client.query(
          `insert into wh_events (event_id, stream_id, stream_version, event_type, payload, metadata) values ($1, $2, 1, 'ItemAdded', '{"cartId": 5}', '{}')`,
          [EventId.unsafeMake(), cartId]
        )
        const error = yield* Effect.flip(store.readStream(cartId))
        expect(error._tag).toBe("InvalidEventPayload")
      })
    )
  })
})

describe("PgEventStore: one round trip, ids and late arrivals", () => {
  const statements: Array<string> = []
  // The append's own statements; the workers' wake-up after its commit (`pg_notify`, not awaited) is apart.
  const appendStatements = () => statements.filter((sql) => !sql.includes("pg_notify"))
  // The client the store sees counts its statements; the test itself uses the real one.
  const counted = Layer.effect(
    EventStore.EventStore,
    Effect.gen(function* () {
      const registry = EventStoreContract.registry
      const client = yield* PgClient.PgClient
      const counting = PgClient.PgClient.of({
        ...client,
        query: <Row extends object>(sql: string, params?: ReadonlyArray<unknown>) =>
          Effect.andThen(
            Effect.sync(() => statements.push(sql)),
            client.query<Row>(sql, params)
          )
      })
      return yield* PgEventStore.make({
        registry,
        routing: () => ["cart_summary"],
        lifecycleTypes: (type) => type === "CartCheckedOut"
      }).pipe(Effect.provideService(PgClient.PgClient, counting))
    })
  ).pipe(Layer.provideMerge(migrated))
  const coordinator = Layer.effect(WorkCoordinator.WorkCoordinator, PgWorkCoordinator.make()).pipe(
    Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "append-test" })),
    Layer.provideMerge(counted)
  )

  layer(coordinator)((it) => {
    it.effect("an append is one statement: events, work rows and lifecycle rows", () =>
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const client = yield* PgClient.PgClient
        const cartId = EventId.unsafeMake()
        statements.length = 0
        const result = yield* store.append(
          cartId,
          [
            EventStoreContract.ItemAdded.make({ cartId, sku: "a", quantity: 1 }),
            EventStoreContract.CartCheckedOut.make({
              cartId,
              at: yield* Effect.orDie(Schema.decodeUnknownEffect(Schema.DateTimeUtcFromString)("2026-01-01T00:00:00Z"))
            })
          ],
          { expectedVersion: "noStream" }
        )
        expect(appendStatements()).toHaveLength(1)
        const ids = result.events.map((e) => e.eventId)
        const work = yield* client.query<{ event_id: string }>(
          "select event_id from wh_perspective_events where stream_id = $1 order by event_id",
          [cartId]
        )
        expect(work.map((r) => r.event_id)).toEqual(ids)
        const lifecycle = yield* client.query<{ event_id: string }>("select event_id from wh_lifecycle_pending where stream_id = $1", [
          cartId
        ])
        expect(lifecycle.map((r) => r.event_id)).toEqual([ids[1]])
        statements.length = 0
        yield* Effect.flip(
          store.append(cartId, [EventStoreContract.ItemAdded.make({ cartId, sku: "b", quantity: 1 })], { expectedVersion: 0 })
        )
        expect(appendStatements()).toHaveLength(1)
      })
    )

    it.effect(
      "p_notify = false: the append notifies nobody at its commit; true: once; work rows inserted by hand notify nobody (no trigger since 0019)",
      () =>
        Effect.gen(function* () {
          const client = yield* PgClient.PgClient
          // One session that listens and appends: Postgres delivers a session's own notifications before its COMMIT
          // completes, so what a statement notified has arrived when the statement's promise resolves.
          const session = yield* Effect.acquireRelease(client.connect, (c) => Effect.promise(() => c.end()))
          const received: Array<string> = []
          const run = (text: string, params: ReadonlyArray<unknown> = []) => Effect.promise(() => session.query(text, [...params]))
          // Only this session's own notifications: other tests append to the same database meanwhile.
          const pid = (yield* run("SELECT pg_backend_pid() AS pid")).rows[0].pid as number
          session.on("notification", (n) => void (n.channel === "wh_work" && n.processId === pid && received.push(n.payload ?? "")))
          yield* run("LISTEN wh_work")
          const append = (notify: boolean) =>
            run(
              `SELECT outcome FROM wh_append_events($1::uuid, NULL, ARRAY[$2::uuid], ARRAY[false], ARRAY['ItemAdded'], ARRAY['{}'::jsonb],
               NULL, NULL, 'now', '{}'::jsonb, ARRAY['ItemAdded'], ARRAY['cart_summary'], 16, ARRAY[]::text[], $3::boolean)`,
              [EventId.unsafeMake(), EventId.unsafeMake(), notify]
            )
          yield* append(false)
          expect(received).toEqual([])
          yield* append(true)
          expect(received).toEqual(["whizbang"])
          // Work rows inserted by a statement of their own notify nobody (the trigger is gone: Citus runs none); in the
          // same transaction an append with p_notify = true still notifies, once, at the commit.
          yield* run("BEGIN")
          yield* append(false)
          yield* run(
            "INSERT INTO wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number) VALUES (gen_random_uuid(), $1, 'cart_summary', $2, 0)",
            [EventId.unsafeMake(), EventId.unsafeMake()]
          )
          yield* run("COMMIT")
          expect(received).toEqual(["whizbang"])
          yield* run("BEGIN")
          yield* append(false)
          yield* append(true)
          yield* run("COMMIT")
          expect(received).toEqual(["whizbang", "whizbang"])
        }).pipe(Effect.scoped)
    )

    it.effect("wh_next_event_id in SQL and EventId.successor agree", () =>
      Effect.gen(function* () {
        const client = yield* PgClient.PgClient
        const ids = [
          "01890000-0000-7000-8000-000000000000",
          "01890000-0000-7000-bfff-ffffffffffff",
          "01890000-0000-7fff-bfff-ffffffffffff",
          "01890000-0000-7abc-9fff-ffffffffffff",
          "f81d4fae-7dec-41d0-a765-00a0c91e6bf6",
          "01890000-0000-8fff-ffff-ffffffffffff",
          ...Array.from({ length: 50 }, () => EventId.unsafeMake())
        ]
        const rows = yield* client.query<{ next: string }>(
          "select wh_next_event_id(id)::text as next from unnest($1::uuid[]) with ordinality as t(id, n) order by n",
          [ids]
        )
        expect(rows.map((r) => r.next)).toEqual(ids.map(EventId.successor))
      })
    )

    it.effect("a refused append leaves the caller's transaction usable", () =>
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const client = yield* PgClient.PgClient
        const cartId = EventId.unsafeMake()
        const add = (sku: string) => EventStoreContract.ItemAdded.make({ cartId, sku, quantity: 1 })
        const outcome = yield* client.withTransaction(
          Effect.gen(function* () {
            yield* store.append(cartId, [add("a")])
            const wrong = yield* Effect.flip(store.append(cartId, [add("b")], { expectedVersion: 0 }))
            yield* store.append(cartId, [add("c")], { expectedVersion: 1 })
            return wrong._tag
          })
        )
        expect(outcome).toBe("WrongExpectedVersion")
        expect((yield* store.readStream(cartId)).map((e) => (e.payload as { sku: string }).sku)).toEqual(["a", "c"])
      })
    )

    it.effect("the same supplied id appended to two streams at once is stored once; the other append gets DuplicateEventId", () =>
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        for (let round = 0; round < 5; round++) {
          const id = EventId.unsafeMake()
          const carts = [EventId.unsafeMake(), EventId.unsafeMake()]
          const exits = yield* Effect.all(
            carts.map((cartId) =>
              Effect.exit(store.append(cartId, [{ ...EventStoreContract.ItemAdded.make({ cartId, sku: "x", quantity: 1 }), eventId: id }]))
            ),
            { concurrency: "unbounded" }
          )
          expect(exits.filter(Exit.isSuccess)).toHaveLength(1)
          const failure = exits.find(Exit.isFailure)!
          expect(
            Exit.isFailure(failure) && failure.cause.reasons[0]?._tag === "Fail" ? failure.cause.reasons[0].error : undefined
          ).toMatchObject({ _tag: "DuplicateEventId", eventIds: [id] })
        }
      })
    )

    it.effect(
      "a supplied id below what a perspective applied is flagged RewindRequired by the fetch; a lagging generator's append is not",
      () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const client = yield* PgClient.PgClient
          const coordinator = yield* WorkCoordinator.WorkCoordinator
          const { instanceId } = yield* InstanceProvider.InstanceProvider
          const cartId = EventId.unsafeMake()
          const add = (sku: string) => EventStoreContract.ItemAdded.make({ cartId, sku, quantity: 1 })
          const applied = yield* store.append(cartId, [add("a"), add("b")])
          const last = applied.events[1]!.eventId
          // As if cart_summary had applied both: work done, cursor at the last id; the stream leased to this instance.
          yield* client.query("delete from wh_perspective_events where stream_id = $1", [cartId])
          yield* client.query(
            "insert into wh_perspective_cursors (stream_id, perspective_name, last_event_id, status) values ($1, 'cart_summary', $2, 2)",
            [cartId, last]
          )
          yield* client.query(
            "insert into wh_active_streams (stream_id, instance_id, partition_number, lease_expiry) values ($1, $2, 0, now() + interval '1 minute')",
            [cartId, instanceId]
          )
          const status = Effect.map(
            client.query<{ status: number; trigger: string | null }>(
              "select status, rewind_trigger_event_id as trigger from wh_perspective_cursors where stream_id = $1",
              [cartId]
            ),
            (rows) => rows[0]!
          )

          // A generator a day behind: the store still mints above the applied ids, so nothing is late.
          const minted = yield* store.append(cartId, [add("c")]).pipe(
            Effect.provideService(
              EventId.Generator,
              Effect.sync(() => EventId.makeAt(Date.now() - 86_400_000))
            )
          )
          expect(minted.events[0]!.eventId > last).toBe(true)
          const normal = yield* coordinator.fetchPendingEvents({ instanceId, streamIds: [cartId] })
          expect(normal.map((e) => [e.eventId, e.rewindRequired])).toEqual([[minted.events[0]!.eventId, false]])
          expect((yield* status).status & 32).toBe(0)

          // An imported event keeps its older id: a late arrival, which the fetch flags for the rewinder.
          const imported = EventId.makeAt(Date.now() - 86_400_000)
          yield* store.append(cartId, [{ ...add("imported"), eventId: imported }])
          const flagged = yield* coordinator.fetchPendingEvents({ instanceId, streamIds: [cartId] })
          expect(flagged.map((e) => [e.eventId, e.rewindRequired])).toEqual([[imported, true]])
          expect(yield* status).toEqual({ status: 2 | 32, trigger: imported })
        })
    )
  })
})

describe("PgEventStore in two service schemas of one database", () => {
  const schemaStore = (schema: string) =>
    Layer.unwrap(
      Effect.map(Effect.service(TestDatabase.TestDatabase), ({ url }) => {
        const client = PgClient.layer({ url, schema }).pipe(Layer.orDie)
        return Layer.effect(EventStore.EventStore, PgEventStore.make({ registry: EventStoreContract.registry })).pipe(
          Layer.provide(Layer.merge(client, PgMigrator.layer.pipe(Layer.provide(client), Layer.orDie)))
        )
      })
    )
  const both = Layer.effectContext(
    Effect.gen(function* () {
      const a = yield* Layer.build(schemaStore("svc_append_a"))
      const b = yield* Layer.build(schemaStore("svc_append_b"))
      return Context.make(StoreA, Context.get(a, EventStore.EventStore)).pipe(Context.add(StoreB, Context.get(b, EventStore.EventStore)))
    })
  ).pipe(Layer.provide(TestDatabase.layer))

  layer(both)((it) => {
    it.effect("each schema's append function writes to its own tables under its own lock", () =>
      Effect.gen(function* () {
        const a = yield* StoreA
        const b = yield* StoreB
        const cartId = EventId.unsafeMake()
        const add = (sku: string) => EventStoreContract.ItemAdded.make({ cartId, sku, quantity: 1 })
        yield* Effect.all(
          [
            a.append(cartId, [add("a1")], { expectedVersion: "noStream" }),
            b.append(cartId, [add("b1"), add("b2")], { expectedVersion: "noStream" })
          ],
          { concurrency: 2 }
        )
        expect((yield* a.readStream(cartId)).map((e) => (e.payload as { sku: string }).sku)).toEqual(["a1"])
        expect((yield* b.readStream(cartId)).map((e) => (e.payload as { sku: string }).sku)).toEqual(["b1", "b2"])
      })
    )
  })
})

class StoreA extends Context.Service<StoreA, EventStore.EventStore["Service"]>()("test/StoreA") {}
class StoreB extends Context.Service<StoreB, EventStore.EventStore["Service"]>()("test/StoreB") {}

describe("EventRegistry", () => {
  layer(Layer.empty)((it) => {
    it.effect("refuses duplicate and hostile type names when validated, and the event store layer refuses to build", () =>
      Effect.gen(function* () {
        const dup = yield* Effect.flip(
          EventRegistry.validate(EventRegistry.make([EventStoreContract.ItemAdded, EventStoreContract.ItemAdded]))
        )
        expect(dup.detail).toBe("defined twice")
        const hostile = EventRegistry.make([{ ...EventStoreContract.ItemAdded, type: " x\n" }])
        const bad = yield* Effect.flip(EventRegistry.validate(hostile))
        expect(bad._tag).toBe("InvalidEventDefinition")
        const built = yield* Effect.flip(
          Layer.build(PgEventStore.layer({ registry: hostile })).pipe(Effect.provide(migrated), Effect.scoped)
        )
        expect(built).toMatchObject({ _tag: "InvalidEventDefinition", eventType: " x\n" })
      })
    )
  })
})
