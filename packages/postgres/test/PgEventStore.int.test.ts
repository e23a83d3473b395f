import { describe, expect, layer } from "@effect/vitest"
import { EventId, EventRegistry, EventStore } from "@whizbang/core"
import { PgClient, PgEventStore, PgMigrator } from "@whizbang/postgres"
import { EventStoreContract, TestDatabase } from "@whizbang/testing"
import { Effect, Layer } from "effect"

const pgClient = Layer.unwrap(
  Effect.map(Effect.service(TestDatabase.TestDatabase), ({ url }) => PgClient.layer({ url, schema: "whizbang" }))
).pipe(Layer.provide(TestDatabase.layer), Layer.orDie)

const migrated = Layer.merge(pgClient, PgMigrator.layer.pipe(Layer.provide(pgClient), Layer.orDie))

EventStoreContract.run("postgres", (registry) => PgEventStore.layer({ registry }).pipe(Layer.provideMerge(migrated)))

describe("PgEventStore (Postgres specifics)", () => {
  const registryLayer = Layer.effect(EventStore.EventStore, Effect.gen(function* () {
    return yield* PgEventStore.make({ registry: EventStoreContract.registry, routing: (type) => (type === "ItemAdded" ? ["cart_summary", "sku_stats"] : []) })
  })).pipe(Layer.provideMerge(migrated))

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
          [ids[0], "cart_summary"], [ids[0], "sku_stats"], [ids[1], "cart_summary"], [ids[1], "sku_stats"]
        ])
        expect(new Set(rows.map((r) => r.partition_number)).size).toBe(1)
        expect(rows[0]!.partition_number).toBeGreaterThanOrEqual(0)
        expect(rows[0]!.partition_number).toBeLessThan(10_000)
      }))

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
      }))
  })
})

describe("EventRegistry", () => {
  layer(Layer.empty)((it) => {
    it.effect("refuses duplicate and hostile type names when validated, and the event store layer refuses to build", () =>
      Effect.gen(function* () {
        const dup = yield* Effect.flip(EventRegistry.validate(EventRegistry.make([EventStoreContract.ItemAdded, EventStoreContract.ItemAdded])))
        expect(dup.detail).toBe("defined twice")
        const hostile = EventRegistry.make([{ ...EventStoreContract.ItemAdded, type: " x\n" }])
        const bad = yield* Effect.flip(EventRegistry.validate(hostile))
        expect(bad._tag).toBe("InvalidEventDefinition")
        const built = yield* Effect.flip(Layer.build(PgEventStore.layer({ registry: hostile })).pipe(Effect.provide(migrated), Effect.scoped))
        expect(built).toMatchObject({ _tag: "InvalidEventDefinition", eventType: " x\n" })
      }))
  })
})
