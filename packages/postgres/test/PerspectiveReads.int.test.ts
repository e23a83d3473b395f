import { describe, expect, layer } from "@effect/vitest"
import { EventId, PerspectiveStore } from "@whizbang/core"
import { PgClient, PgPerspectiveStore, SchemaReady } from "@whizbang/postgres"
import { TestDatabase } from "@whizbang/testing"
import { Deferred, Effect, Exit, Fiber, Layer, Option } from "effect"

const pgClient = Layer.unwrap(
  Effect.map(Effect.service(TestDatabase.TestDatabase), ({ url }) => PgClient.layer({ url, schema: "perspective_reads" }))
).pipe(Layer.provide(TestDatabase.layer), Layer.orDie)

/** Read statements the store sent (its by-id select), counted on the client it was given. */
const sent = { reads: 0 }
const counting = Layer.effect(
  PgClient.PgClient,
  Effect.map(Effect.service(PgClient.PgClient), (client) =>
    PgClient.PgClient.of({
      ...client,
      query: (text, params, options) => {
        if (text.startsWith("SELECT id, data")) sent.reads++
        return client.query(text, params, options)
      }
    })
  )
)

const stores = PgPerspectiveStore.layer(["cart_summary"]).pipe(
  Layer.provide(counting),
  Layer.provideMerge(Layer.merge(pgClient, SchemaReady.layer.pipe(Layer.provide(pgClient), Layer.orDie))),
  Layer.orDie
)

const write = (streamId: string, n: number): PerspectiveStore.Write => ({
  perspectiveName: "cart_summary",
  streamId,
  data: { n },
  action: "none"
})

describe("PgPerspectiveStore: reads by id", () => {
  layer(stores, { excludeTestServices: true })((it) => {
    it.effect("concurrent reads share statements, and each gets its own row (or none)", () =>
      Effect.gen(function* () {
        const store = yield* PerspectiveStore.PerspectiveStore
        const ids = Array.from({ length: 300 }, () => EventId.unsafeMake())
        const written = ids.filter((_, i) => i % 3 !== 0)
        yield* store.writeBatch(written.map((id, n) => write(id, n)))
        const expected = new Map(written.map((id, n) => [id, n] as const))
        const before = sent.reads
        // Each id twice: two readers of one row in flight at once both get it.
        const rows = yield* Effect.forEach([...ids, ...ids], (id) => store.getById("cart_summary", id), { concurrency: "unbounded" })
        const statements = sent.reads - before
        expect(statements).toBeGreaterThan(0)
        expect(statements).toBeLessThan(100)
        const answered = [...ids, ...ids].map((id, i) => [id, rows[i]!] as const)
        for (const [id, row] of answered) {
          if (!expected.has(id)) {
            expect(Option.isNone(row)).toBe(true)
            continue
          }
          expect(Option.getOrThrow(row).id).toBe(id)
        }
        // Every written row was found by its own reader, with its own data.
        const found = answered.filter(([, row]) => Option.isSome(row))
        expect(found).toHaveLength(2 * expected.size)
        for (const [id, row] of found) expect((Option.getOrThrow(row).data as { n: number }).n).toBe(expected.get(id))
      })
    )

    it.effect("a read asked after a write committed sees it, however many reads are in flight", () =>
      Effect.gen(function* () {
        const store = yield* PerspectiveStore.PerspectiveStore
        const ids = Array.from({ length: 200 }, () => EventId.unsafeMake())
        const stale = yield* Effect.forEach(
          ids,
          (id, i) =>
            Effect.gen(function* () {
              yield* store.writeBatch([write(id, i)])
              const row = yield* store.getById("cart_summary", id)
              return Option.isNone(row) || (row.value.data as { n: number }).n !== i
            }),
          { concurrency: "unbounded" }
        )
        expect(stale.filter(Boolean)).toHaveLength(0)
      })
    )

    it.effect("inside a caller's transaction a read is the transaction's own: it sees the uncommitted write", () =>
      Effect.gen(function* () {
        const store = yield* PerspectiveStore.PerspectiveStore
        const client = yield* PgClient.PgClient
        const id = EventId.unsafeMake()
        const inserted = yield* Deferred.make<void>()
        const go = yield* Deferred.make<void>()
        const read = yield* Deferred.make<Option.Option<PerspectiveStore.Row>>()
        const release = yield* Deferred.make<void>()
        // The transaction writes the row and reads it while reads outside it are in flight (their statements hold
        // the store's two), then is rolled back.
        const tx = yield* Effect.forkChild(
          client.withTransaction(
            Effect.gen(function* () {
              yield* client.query(
                `INSERT INTO wh_per_cart_summary__v1 (id, data, metadata, scope, version) VALUES ($1, '{"n": 7}', '{}', '{}', 1)`,
                [id]
              )
              yield* Deferred.succeed(inserted, undefined)
              yield* Deferred.await(go)
              yield* Deferred.succeed(read, yield* store.getById("cart_summary", id))
              yield* Deferred.await(release)
              return yield* Effect.fail("roll back" as const)
            })
          )
        )
        yield* Deferred.await(inserted)
        const reads = yield* Effect.forkChild(
          Effect.forEach(Array.from({ length: 20 }), () => store.getById("cart_summary", id), { concurrency: "unbounded" })
        )
        yield* Effect.yieldNow
        yield* Deferred.succeed(go, undefined)
        const inside = yield* Deferred.await(read)
        const outside = yield* Fiber.join(reads)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.await(tx)
        expect(Option.map(inside, (row) => row.data)).toEqual(Option.some({ n: 7 }))
        expect(outside.filter(Option.isSome)).toHaveLength(0)
        expect(Option.isNone(yield* store.getById("cart_summary", id))).toBe(true)
      })
    )

    it.effect("an id Postgres writes back differently (upper case) finds its row; one that is no uuid fails alone", () =>
      Effect.gen(function* () {
        const store = yield* PerspectiveStore.PerspectiveStore
        const ids = Array.from({ length: 50 }, () => EventId.unsafeMake())
        yield* store.writeBatch(ids.map((id, i) => write(id, i)))
        const asked = [...ids.map((id, i) => (i % 2 === 0 ? id.toUpperCase() : id)), "not-a-uuid"]
        const exits = yield* Effect.forEach(asked, (id) => Effect.exit(store.getById("cart_summary", id)), { concurrency: "unbounded" })
        exits.slice(0, ids.length).forEach((exit, i) => {
          expect(Exit.isSuccess(exit) && Option.isSome(exit.value) && exit.value.value.id).toBe(ids[i])
        })
        const bad = exits[ids.length]!
        expect(Exit.isFailure(bad)).toBe(true)
        expect(String(bad)).toContain("PerspectiveStoreError")
      })
    )
  })
})
