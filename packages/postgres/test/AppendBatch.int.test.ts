import { describe, expect, layer } from "@effect/vitest"
import { EventId, EventStore, EventStoreError } from "@whizbang/core"
import { PgClient, PgEventStore, PgMigrator } from "@whizbang/postgres"
import { EventStoreContract, TestDatabase } from "@whizbang/testing"
import { Deferred, Effect, Exit, Fiber, Layer, Metric, Option, Result, Schedule, Schema } from "effect"

const { ItemAdded, CartCheckedOut } = EventStoreContract

const pgClient = Layer.unwrap(
  Effect.map(Effect.service(TestDatabase.TestDatabase), ({ url }) => PgClient.layer({ url, schema: "append_batch" }))
).pipe(Layer.provide(TestDatabase.layer), Layer.orDie)

const store = PgEventStore.layer({
  registry: EventStoreContract.registry,
  routing: (type) => (type === "ItemAdded" ? ["cart_summary", "sku_stats"] : []),
  lifecycleTypes: (type) => type === "CartCheckedOut"
}).pipe(Layer.provideMerge(Layer.merge(pgClient, PgMigrator.layer.pipe(Layer.provide(pgClient), Layer.orDie))), Layer.orDie)

/** Appends of these streams that shared a transaction with another append (the batches they went in). */
const sharedTransactions = (streams: ReadonlyArray<string>) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
    client
      .query<{ appends: string }>(
        `SELECT count(*) AS appends FROM (
           SELECT xmin::text AS tx, count(DISTINCT stream_id) AS streams FROM wh_events WHERE stream_id = ANY($1::uuid[]) GROUP BY 1
         ) t WHERE t.streams > 1`,
        [streams]
      )
      .pipe(Effect.map(([row]) => Number(row?.appends ?? 0)))
  )

const add = (cartId: string, sku: string) => ItemAdded.make({ cartId, sku, quantity: 1 })

describe("PgEventStore: concurrent appends go together", () => {
  // The real clock: two tests wait with timeouts and schedules.
  layer(store, { excludeTestServices: true })((it) => {
    it.effect("appends that wait for a slot share one statement, and each gets its own answer", () =>
      Effect.gen(function* () {
        const events = yield* EventStore.EventStore
        const client = yield* PgClient.PgClient
        const at = yield* Schema.decodeUnknownEffect(Schema.DateTimeUtcFromString)("2026-01-02T03:04:05.000Z")
        const taken = EventId.unsafeMake()
        const takenStream = EventId.unsafeMake()
        yield* events.append(takenStream, [{ ...add(takenStream, "first"), eventId: taken }])
        const streams = Array.from({ length: 60 }, () => EventId.unsafeMake())
        const correlationId = EventId.unsafeMake()
        const results = yield* Effect.forEach(
          streams,
          (cartId, i) =>
            Effect.result(
              i % 6 === 1
                ? events.append(cartId, [add(cartId, "late")], { expectedVersion: 3 })
                : i % 6 === 2
                  ? events.append(cartId, [{ ...add(cartId, "dup"), eventId: taken }])
                  : i % 6 === 3
                    ? events.append(cartId, [add(cartId, "a"), CartCheckedOut.make({ cartId, at })], {
                        correlationId,
                        scope: { tenantId: `t${i}` }
                      })
                    : events.append(cartId, [add(cartId, "a"), add(cartId, "b")])
            ),
          { concurrency: "unbounded" }
        )
        for (const [i, result] of results.entries()) {
          const cartId = streams[i]!
          if (i % 6 === 1) {
            expect(result).toEqual(Result.fail(new EventStoreError.WrongExpectedVersion({ streamId: cartId, expected: 3, actual: 0 })))
            continue
          }
          if (i % 6 === 2) {
            expect(result).toEqual(Result.fail(new EventStoreError.DuplicateEventId({ eventIds: [taken] })))
            continue
          }
          if (Result.isFailure(result)) throw new Error(`append ${i} failed: ${String(result.failure)}`)
          const stored = yield* events.readStream(cartId)
          // What the caller was told is what was stored: ids, versions, metadata and scope.
          expect(stored).toEqual(result.success.events)
          expect(stored.map((e) => e.streamVersion)).toEqual([1, 2])
          expect(stored[0]!.metadata.correlationId).toBe(i % 6 === 3 ? correlationId : stored[0]!.eventId)
          expect(stored[1]!.metadata.correlationId).toBe(stored[0]!.metadata.correlationId)
          expect(stored[0]!.scope).toEqual(i % 6 === 3 ? { tenantId: `t${i}` } : {})
        }
        const refusedStreams = streams.filter((_, i) => i % 6 === 1 || i % 6 === 2)
        const okStreams = streams.filter((_, i) => i % 6 !== 1 && i % 6 !== 2)
        const [counts] = yield* client.query<{ refused: string; work: string; lifecycle: string }>(
          `SELECT (SELECT count(*) FROM wh_events WHERE stream_id = ANY($1::uuid[])) AS refused,
                  (SELECT count(*) FROM wh_perspective_events WHERE stream_id = ANY($2::uuid[])) AS work,
                  (SELECT count(*) FROM wh_lifecycle_pending WHERE stream_id = ANY($2::uuid[])) AS lifecycle`,
          [refusedStreams, okStreams]
        )
        // Refused appends wrote nothing; every other append its work rows (2 per ItemAdded) and lifecycle rows.
        expect(counts).toEqual({
          refused: "0",
          work: String(okStreams.length * 4 - streams.filter((_, i) => i % 6 === 3).length * 2),
          lifecycle: String(streams.filter((_, i) => i % 6 === 3).length)
        })
        expect(yield* sharedTransactions(okStreams)).toBeGreaterThan(0)
        // The histogram of appends per statement saw statements of several appends.
        const histogram = (yield* Metric.snapshot).find((m) => m.id === "whizbang_appends_per_statement")
        expect((histogram?.state as { max?: number } | undefined)?.max).toBeGreaterThan(1)
      })
    )

    it.effect("appends to one stream from many fibers never share a statement and keep id order = version order", () =>
      Effect.gen(function* () {
        const events = yield* EventStore.EventStore
        const client = yield* PgClient.PgClient
        const streams = Array.from({ length: 3 }, () => EventId.unsafeMake())
        const others = Array.from({ length: 40 }, () => EventId.unsafeMake())
        yield* Effect.forEach(
          Array.from({ length: 8 }, (_, f) => f),
          (f) =>
            Effect.forEach(
              Array.from({ length: 25 }, (_, k) => k),
              (k) => {
                const cartId = k % 2 === 0 ? streams[(f + k) % 3]! : others[(f * 5 + k) % 40]!
                return events.append(cartId, [add(cartId, `${f}.${k}`)])
              },
              { discard: true }
            ),
          { concurrency: "unbounded", discard: true }
        )
        const rows = yield* client.query<{ stream_id: string; n: string; gaps: string; disorder: string }>(
          `SELECT stream_id, count(*) AS n,
                  count(*) FILTER (WHERE prev_version IS DISTINCT FROM stream_version - 1 AND stream_version <> 1) AS gaps,
                  count(*) FILTER (WHERE prev_id >= event_id) AS disorder
           FROM (SELECT stream_id, stream_version, event_id,
                        lag(stream_version) OVER (PARTITION BY stream_id ORDER BY stream_version) AS prev_version,
                        lag(event_id) OVER (PARTITION BY stream_id ORDER BY stream_version) AS prev_id
                 FROM wh_events WHERE stream_id = ANY($1::uuid[])) t
           GROUP BY stream_id`,
          [[...streams, ...others]]
        )
        expect(rows.reduce((sum, r) => sum + Number(r.n), 0)).toBe(200)
        expect(rows.every((r) => r.gaps === "0" && r.disorder === "0")).toBe(true)
        const [sameStream] = yield* client.query<{ n: string }>(
          `SELECT count(*) AS n FROM (SELECT xmin::text, stream_id FROM wh_events WHERE stream_id = ANY($1::uuid[])
           GROUP BY 1, 2 HAVING count(*) > 1) t`,
          [[...streams, ...others]]
        )
        expect(sameStream!.n).toBe("0")
        expect(yield* sharedTransactions([...streams, ...others])).toBeGreaterThan(0)
      })
    )

    it.effect("an id supplied by two appends of one statement: one is stored, the other is told DuplicateEventId", () =>
      Effect.gen(function* () {
        const events = yield* EventStore.EventStore
        const id = EventId.unsafeMake()
        const streams = Array.from({ length: 30 }, () => EventId.unsafeMake())
        const exits = yield* Effect.forEach(
          streams,
          (cartId, i) =>
            Effect.exit(events.append(cartId, [i === 10 || i === 20 ? { ...add(cartId, "x"), eventId: id } : add(cartId, "x")])),
          { concurrency: "unbounded" }
        )
        const failed = exits.flatMap((exit, i) => (Exit.isFailure(exit) ? [i] : []))
        expect(failed.length).toBe(1)
        expect([10, 20]).toContain(failed[0])
        expect(JSON.stringify((exits[failed[0]!] as Exit.Failure<unknown, unknown>).cause)).toContain("DuplicateEventId")
        const owner = failed[0] === 10 ? streams[20]! : streams[10]!
        expect((yield* events.readStream(owner)).map((e) => e.eventId)).toEqual([id])
      })
    )

    it.effect("a stream locked by a caller's transaction holds up only that stream's append", () =>
      Effect.gen(function* () {
        const events = yield* EventStore.EventStore
        const client = yield* PgClient.PgClient
        const locked = EventId.unsafeMake()
        const release = yield* Deferred.make<void>()
        const inside = yield* Deferred.make<void>()
        const holder = yield* Effect.forkChild(
          client.withTransaction(
            Effect.andThen(
              events.append(locked, [add(locked, "in tx")]),
              Effect.andThen(Deferred.succeed(inside, undefined), Deferred.await(release))
            )
          )
        )
        yield* Deferred.await(inside)
        const others = Array.from({ length: 30 }, () => EventId.unsafeMake())
        // The locked stream's append among the others: it waits for a slot with them and goes in their statement.
        const fibers = yield* Effect.forEach([...others.slice(0, 15), locked, ...others.slice(15)], (cartId) =>
          Effect.forkChild(events.append(cartId, [add(cartId, cartId === locked ? "after" : "x")]))
        )
        const waiting = fibers[15]!
        // Every other append finishes while the transaction still holds the lock (a timeout here is the failure).
        const done = yield* Fiber.joinAll(fibers.filter((f) => f !== waiting)).pipe(Effect.timeout("10 seconds"))
        expect(done.length).toBe(30)
        expect(waiting.pollUnsafe()).toBeUndefined()
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        expect((yield* Fiber.join(waiting)).nextExpectedVersion).toBe(2)
        expect(yield* sharedTransactions(others)).toBeGreaterThan(0)
      })
    )

    it.effect("bulk appends go alone, outside the slots: two in flight hold up no other append", () =>
      Effect.gen(function* () {
        const events = yield* EventStore.EventStore
        const client = yield* PgClient.PgClient
        const bulkStreams = [EventId.unsafeMake(), EventId.unsafeMake()]
        const bulks = yield* Effect.forEach(bulkStreams, (cartId) =>
          Effect.forkChild(
            events.append(
              cartId,
              Array.from({ length: 30_000 }, (_, i) => add(cartId, `bulk${i}`))
            )
          )
        )
        // Both bulk appends are running in the server (or the test cannot show anything).
        const running = client
          .query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%wh_append_events(%' AND datname = current_database() AND pid <> pg_backend_pid()"
          )
          .pipe(Effect.map(([row]) => Number(row!.n)))
        yield* Effect.repeat(running, {
          until: (n) => n >= 2 || bulks.some((f) => f.pollUnsafe() !== undefined),
          schedule: Schedule.spaced("5 millis")
        })
        expect(bulks.every((f) => f.pollUnsafe() === undefined)).toBe(true)
        const small = Array.from({ length: 20 }, () => EventId.unsafeMake())
        yield* Effect.forEach(small, (cartId) => events.append(cartId, [add(cartId, "x")]), { concurrency: "unbounded", discard: true })
        // Every small append finished while both bulk appends were still running.
        expect(bulks.map((f) => f.pollUnsafe())).toEqual([undefined, undefined])
        const done = yield* Fiber.joinAll(bulks)
        expect(done.map((r) => r.nextExpectedVersion)).toEqual([30_000, 30_000])
      })
    )

    it.effect("appends that wait for held streams' locks take no slot: three held streams, 20 other appends finish meanwhile", () =>
      Effect.gen(function* () {
        const events = yield* EventStore.EventStore
        const client = yield* PgClient.PgClient
        const held = Array.from({ length: 3 }, () => EventId.unsafeMake())
        const locked = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const transaction = yield* Effect.forkChild(
          client.withTransaction(
            Effect.gen(function* () {
              for (const cartId of held) yield* events.append(cartId, [add(cartId, "in-transaction")])
              yield* Deferred.succeed(locked, undefined)
              yield* Deferred.await(release)
            })
          )
        )
        yield* Deferred.await(locked)
        // More appends to held streams than there are slots, each waiting for its lock in the server.
        const behind = yield* Effect.forkChild(
          Effect.forEach(held, (cartId) => events.append(cartId, [add(cartId, "behind")]), { concurrency: "unbounded" })
        )
        const waiting = client
          .query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%append_events(%' AND datname = current_database()"
          )
          .pipe(Effect.map(([row]) => Number(row!.n)))
        yield* Effect.repeat(waiting, { until: (n) => n >= held.length, schedule: Schedule.spaced("5 millis") })
        const others = Array.from({ length: 20 }, () => EventId.unsafeMake())
        const finished = yield* Effect.forEach(others, (cartId) => events.append(cartId, [add(cartId, "x")]), {
          concurrency: "unbounded",
          discard: true
        }).pipe(Effect.timeoutOption("10 seconds"))
        expect(behind.pollUnsafe(), "the appends to held streams still wait").toBeUndefined()
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(transaction)
        expect((yield* Fiber.join(behind)).map((r) => r.nextExpectedVersion)).toEqual([2, 2, 2])
        expect(Option.isSome(finished), "the other appends finished while the locks were held").toBe(true)
      })
    )

    it.effect("appends that wait go together, at most 1,000 events to a statement", () =>
      Effect.gen(function* () {
        const events = yield* EventStore.EventStore
        const client = yield* PgClient.PgClient
        // 40 appends of 100 events (the most that waits for a slot) at once: 4,000 events that cannot all go in one call.
        const streams = Array.from({ length: 40 }, () => EventId.unsafeMake())
        yield* Effect.forEach(
          streams,
          (cartId) =>
            events.append(
              cartId,
              Array.from({ length: 100 }, (_, i) => add(cartId, `item${i}`))
            ),
          { concurrency: "unbounded", discard: true }
        )
        const perTransaction = yield* client.query<{ events: string }>(
          "SELECT count(*) AS events FROM wh_events WHERE stream_id = ANY($1::uuid[]) GROUP BY xmin::text",
          [streams]
        )
        const sizes = perTransaction.map((row) => Number(row.events))
        expect(sizes.reduce((a, b) => a + b, 0)).toBe(4_000)
        expect(Math.max(...sizes)).toBeLessThanOrEqual(1_000)
        // ... and they did go together.
        expect(Math.max(...sizes)).toBeGreaterThan(100)
      })
    )

    it.effect("a lone appender's appends each go alone", () =>
      Effect.gen(function* () {
        const events = yield* EventStore.EventStore
        const streams = Array.from({ length: 20 }, () => EventId.unsafeMake())
        yield* Effect.forEach(streams, (cartId) => events.append(cartId, [add(cartId, "x")]), { discard: true })
        expect(yield* sharedTransactions(streams)).toBe(0)
      })
    )
  })
})
