/**
 * The EventStore contract as a vitest suite: every EventStore layer (in-memory, Postgres, or a user's own) must pass
 * it. Call {@link run} from a test file with a function that builds the layer from the suite's event registry.
 *
 * @since 0.1.0
 */
import type * as EffectVitest from "@effect/vitest"
import { EventDefinition, EventId, EventRegistry, EventStore } from "@whizbang/core"
import { Effect, Exit, type Layer, Schema } from "effect"
import { TestClock } from "effect/testing"

// @effect/vitest is an optional peer of @whizbang/testing and only this suite needs it: imported here, so that the
// package's other modules load without it (a static import made every `import "@whizbang/testing"` fail).
const effectVitest: typeof EffectVitest | Error = await import("@effect/vitest").catch((cause: unknown) => {
  const code = (cause as { code?: unknown }).code
  if (code !== "ERR_MODULE_NOT_FOUND" || !String((cause as Error).message).includes("'@effect/vitest'")) throw cause
  return new Error("EventStoreContract.run needs @effect/vitest (an optional peer of @whizbang/testing): pnpm add -D @effect/vitest")
})

/**
 * The events the suite appends.
 *
 * @category constants
 * @since 0.1.0
 */
export const ItemAdded = EventDefinition.make("ItemAdded", {
  payload: Schema.Struct({ cartId: Schema.String, sku: Schema.String, quantity: Schema.Number }),
  streamId: (p) => p.cartId
})

/**
 * @category constants
 * @since 0.1.0
 */
export const CartCheckedOut = EventDefinition.make("CartCheckedOut", {
  payload: Schema.Struct({ cartId: Schema.String, at: Schema.DateTimeUtcFromString }),
  streamId: (p) => p.cartId
})

/**
 * An event with a free-form part, for payloads only storage can refuse (nesting depth).
 *
 * @category constants
 * @since 0.1.0
 */
export const NoteAdded = EventDefinition.make("NoteAdded", {
  payload: Schema.Struct({ cartId: Schema.String, note: Schema.Unknown }),
  streamId: (p) => p.cartId
})

/** Largest payload the suite's registry accepts, small so the "too large" case is cheap. */
const maxPayloadBytes = 64 * 1024

/**
 * The registry the suite's layers are built with.
 *
 * @category constructors
 * @since 0.1.0
 */
export const registry = EventRegistry.make([ItemAdded, CartCheckedOut, NoteAdded], { maxPayloadBytes })

/** A generator that always proposes the same id: every id after the first must be raised by the store. */
const constantGenerator = (id: string) => Effect.provideService(EventId.Generator, Effect.succeed(id))

const isSorted = (ids: ReadonlyArray<string>) => ids.every((id, i) => i === 0 || ids[i - 1]! < id)

const failureTag = <A, E extends { readonly _tag: string }>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.map((r) => (r._tag === "Fail" ? r.error._tag : r._tag)).join(",") : "success"

/**
 * Runs the contract against the layer built by `makeLayer`. Needs `@effect/vitest` (an optional peer dependency);
 * without it, it throws an error saying what to install.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = <E>(name: string, makeLayer: (registry: EventRegistry.EventRegistry) => Layer.Layer<EventStore.EventStore, E>): void => {
  if (effectVitest instanceof Error) throw effectVitest
  const { describe, expect, layer } = effectVitest
  const storeLayer = makeLayer(registry)
  describe(`EventStore contract: ${name}`, () => {
    layer(storeLayer, { timeout: 60_000 })((it) => {
      it.effect("appends a batch and reads it back in order, with versions, UUIDv7 ids, metadata and scope", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const result = yield* store.append(
            cartId,
            [ItemAdded.make({ cartId, sku: "a", quantity: 1 }), ItemAdded.make({ cartId, sku: "b", quantity: 2 })],
            { expectedVersion: "noStream", scope: { userId: "u-1", tenantId: "t-1", roles: ["admin"] } }
          )
          expect(result.nextExpectedVersion).toBe(2)
          const read = yield* store.readStream(cartId)
          expect(read.map((e) => [e.streamVersion, e.eventType, e.payload])).toEqual([
            [1, "ItemAdded", { cartId, sku: "a", quantity: 1 }],
            [2, "ItemAdded", { cartId, sku: "b", quantity: 2 }]
          ])
          expect(read.map((e) => e.eventId)).toEqual(result.events.map((e) => e.eventId))
          expect(read.every((e) => /^[0-9a-f]{8}-[0-9a-f]{4}-7/.test(e.eventId))).toBe(true)
          expect(read[0]!.eventId < read[1]!.eventId).toBe(true)
          expect(read[1]!.metadata.correlationId).toBe(read[0]!.eventId)
          expect(read[0]!.metadata.causationId).toBeNull()
          expect(Number.isNaN(Date.parse(read[0]!.metadata.timestamp))).toBe(false)
          expect(read[0]!.scope).toEqual({ userId: "u-1", tenantId: "t-1", roles: ["admin"] })
          expect(yield* store.streamVersion(cartId)).toBe(2)
        })
      )

      it.effect("decodes payloads through their schema (a DateTime survives the round trip)", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const at = yield* Schema.decodeUnknownEffect(Schema.DateTimeUtcFromString)("2026-01-02T03:04:05.000Z")
          yield* store.append(cartId, [CartCheckedOut.make({ cartId, at })])
          const [event] = yield* store.readStream(cartId)
          expect((event!.payload as { at: unknown }).at).toEqual(at)
        })
      )

      it.effect("narrows a read event to its definition with `is` (folding a stream on the write side)", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const at = yield* Schema.decodeUnknownEffect(Schema.DateTimeUtcFromString)("2026-01-02T03:04:05.000Z")
          yield* store.append(cartId, [ItemAdded.make({ cartId, sku: "a", quantity: 2 }), CartCheckedOut.make({ cartId, at })])
          const events = yield* store.readStream(cartId)
          const quantity = events.reduce((n, e) => (ItemAdded.is(e) ? n + e.payload.quantity : n), 0)
          const checkedOut = events.flatMap((e) => (CartCheckedOut.is(e) ? [e.payload.at] : []))
          expect({ quantity, checkedOut }).toEqual({ quantity: 2, checkedOut: [at] })
          expect(events.map((e) => [ItemAdded.is(e), CartCheckedOut.is(e), NoteAdded.is(e)])).toEqual([
            [true, false, false],
            [false, true, false]
          ])
        })
      )

      it.effect("enforces the expected version and writes nothing on a mismatch", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const add = ItemAdded.make({ cartId, sku: "a", quantity: 1 })
          yield* store.append(cartId, [add], { expectedVersion: 0 })
          const error = yield* Effect.flip(store.append(cartId, [add, add], { expectedVersion: 0 }))
          expect(error).toMatchObject({ _tag: "WrongExpectedVersion", streamId: cartId, expected: 0, actual: 1 })
          const noStream = yield* Effect.flip(store.append(cartId, [add], { expectedVersion: "noStream" }))
          expect(noStream._tag).toBe("WrongExpectedVersion")
          expect(yield* store.streamVersion(cartId)).toBe(1)
          yield* store.append(cartId, [add], { expectedVersion: 1 })
          yield* store.append(cartId, [add], { expectedVersion: "any" })
          expect(yield* store.streamVersion(cartId)).toBe(3)
        })
      )

      it.effect("lets exactly one of many concurrent appends at the same expected version win", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const attempts = Array.from({ length: 12 }, (_, i) =>
            Effect.exit(store.append(cartId, [ItemAdded.make({ cartId, sku: `s${i}`, quantity: i })], { expectedVersion: 0 }))
          )
          const exits = yield* Effect.all(attempts, { concurrency: "unbounded" })
          expect(exits.filter(Exit.isSuccess)).toHaveLength(1)
          expect(exits.filter(Exit.isFailure).map(failureTag)).toEqual(Array(11).fill("WrongExpectedVersion"))
          expect(yield* store.readStream(cartId)).toHaveLength(1)
        })
      )

      it.effect("keeps many concurrent appenders without a version check gap-free", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          yield* Effect.all(
            Array.from({ length: 20 }, (_, i) =>
              store
                .append(cartId, [ItemAdded.make({ cartId, sku: `s${i}`, quantity: i })])
                .pipe(Effect.retry({ times: 50, while: (e) => e._tag === "WrongExpectedVersion" }))
            ),
            { concurrency: "unbounded" }
          )
          const read = yield* store.readStream(cartId)
          expect(read.map((e) => e.streamVersion)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
        })
      )

      it.effect("writes nothing of a batch when one event is invalid", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const good = ItemAdded.make({ cartId, sku: "a", quantity: 1 })
          const bad = { type: "ItemAdded", payload: { cartId, sku: 42, quantity: "x" } }
          const error = yield* Effect.flip(store.append(cartId, [good, bad]))
          expect(error._tag).toBe("InvalidEventPayload")
          expect(error.message).toMatch(/sku/)
          const unknown = yield* Effect.flip(store.append(cartId, [good, { type: "NoSuchEvent", payload: {} }]))
          expect(unknown).toMatchObject({ _tag: "UnknownEventType", eventType: "NoSuchEvent" })
          expect(yield* store.streamVersion(cartId)).toBe(0)
        })
      )

      it.effect("refuses hostile input with typed errors", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const tag = <A, E extends { _tag: string }>(effect: Effect.Effect<A, E>) => Effect.map(Effect.flip(effect), (e) => e._tag)
          expect(yield* tag(store.append("not-a-uuid", [ItemAdded.make({ cartId: "not-a-uuid", sku: "a", quantity: 1 })]))).toBe(
            "InvalidStreamId"
          )
          expect(yield* tag(store.append("'; drop table wh_events; --", []))).toBe("InvalidStreamId")
          expect(yield* tag(store.append(cartId, [ItemAdded.make({ cartId: EventId.unsafeMake(), sku: "a", quantity: 1 })]))).toBe(
            "InvalidStreamId"
          )
          expect(yield* tag(store.append(cartId, [ItemAdded.make({ cartId, sku: "x".repeat(maxPayloadBytes + 1), quantity: 1 })]))).toBe(
            "InvalidEventPayload"
          )
          expect(yield* tag(store.append(cartId, [ItemAdded.make({ cartId, sku: "nul\u0000byte", quantity: 1 })]))).toBe(
            "InvalidEventPayload"
          )
          expect(yield* tag(store.append(cartId, [ItemAdded.make({ cartId, sku: "a", quantity: Number.NaN })]))).toBe("InvalidEventPayload")
          expect(yield* tag(store.append(cartId, []))).toBe("InvalidRequest")
          expect(yield* tag(store.append(cartId, [ItemAdded.make({ cartId, sku: "a", quantity: 1 })], { expectedVersion: -1 }))).toBe(
            "InvalidRequest"
          )
          expect(yield* tag(store.append(cartId, [ItemAdded.make({ cartId, sku: "a", quantity: 1 })], { causationId: "1 or 1=1" }))).toBe(
            "InvalidRequest"
          )
          expect(
            yield* tag(store.append(cartId, [ItemAdded.make({ cartId, sku: "a", quantity: 1 })], { scope: { userId: "u".repeat(10_000) } }))
          ).toBe("InvalidRequest")
          expect(yield* tag(store.readStream("x"))).toBe("InvalidStreamId")
          expect(yield* tag(store.readStream(cartId, { afterVersion: -3 }))).toBe("InvalidRequest")
          expect(yield* store.streamVersion(cartId)).toBe(0)
        })
      )

      it.effect("stores strings that look like SQL, quotes and any Unicode verbatim", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const skus = ["'); delete from wh_events; --", "$1 $$ \\ \" '", "emoji 🛒 — ünïcödé", "x".repeat(20_000)]
          yield* store.append(
            cartId,
            skus.map((sku) => ItemAdded.make({ cartId, sku, quantity: 1 }))
          )
          expect((yield* store.readStream(cartId)).map((e) => (e.payload as { sku: string }).sku)).toEqual(skus)
        })
      )

      it.effect("reads after a version and up to a limit", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          yield* store.append(
            cartId,
            Array.from({ length: 5 }, (_, i) => ItemAdded.make({ cartId, sku: `s${i}`, quantity: i }))
          )
          const read = yield* store.readStream(cartId, { afterVersion: 2, limit: 2 })
          expect(read.map((e) => e.streamVersion)).toEqual([3, 4])
          expect(yield* store.readStream(EventId.unsafeMake())).toEqual([])
        })
      )

      it.effect("mints ids above the stream's highest id, in version order, whatever the generator proposes", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const add = (sku: string) => ItemAdded.make({ cartId, sku, quantity: 1 })
          const first = yield* store.append(cartId, [add("a"), add("b")])
          // A generator far behind (another process's slow clock): its proposal is below what is stored.
          const lagging = yield* store.append(cartId, [add("c"), add("d"), add("e")]).pipe(constantGenerator(EventId.makeAt(1_000)))
          const read = yield* store.readStream(cartId)
          const ids = read.map((e) => e.eventId)
          expect(ids).toEqual([...first.events, ...lagging.events].map((e) => e.eventId))
          expect(isSorted(ids)).toBe(true)
          expect(ids.every(EventId.isV7)).toBe(true)
          // The smallest ids above the highest: one step each.
          expect(ids[2]).toBe(EventId.successor(ids[1]!))
          expect(ids[4]).toBe(EventId.successor(ids[3]!))
          expect(read[2]!.metadata.correlationId).toBe(ids[2])
          expect(read[4]!.metadata.correlationId).toBe(ids[2])
          // A proposal above the highest is used as is.
          const ahead = EventId.makeAt(Date.now() + 3_600_000)
          const next = yield* store.append(cartId, [add("f")]).pipe(constantGenerator(ahead))
          expect(next.events[0]!.eventId).toBe(ahead)
        })
      )

      it.effect("takes event ids from EventId.Generator (EventId.fromClock follows the TestClock)", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          yield* TestClock.setTime(Date.parse("2031-05-06T07:08:09.010Z"))
          const result = yield* store
            .append(cartId, [ItemAdded.make({ cartId, sku: "a", quantity: 1 })])
            .pipe(Effect.provideService(EventId.Generator, EventId.fromClock))
          const id = result.events[0]!.eventId
          expect(parseInt(id.replaceAll("-", "").slice(0, 12), 16)).toBe(Date.parse("2031-05-06T07:08:09.010Z"))
          expect((yield* store.readStream(cartId))[0]!.eventId).toBe(id)
        })
      )

      it.effect("keeps id order equal to version order under many concurrent appenders with skewed clocks", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const carts = Array.from({ length: 3 }, () => EventId.unsafeMake())
          const appenders = 8
          const appendsEach = 12
          yield* Effect.all(
            Array.from({ length: appenders }, (_, appender) =>
              Effect.forEach(
                Array.from({ length: appendsEach }, (_, k) => k),
                (k) => {
                  const cartId = carts[(appender + k) % carts.length]!
                  const batch = Array.from({ length: 1 + ((appender + k) % 3) }, (_, j) =>
                    ItemAdded.make({ cartId, sku: `${appender}-${k}-${j}`, quantity: 1 })
                  )
                  // Each appender is a "process" whose clock runs appender x 50 ms behind.
                  const skewed = Effect.sync(() => EventId.makeAt(Date.now() - appender * 50))
                  return store.append(cartId, batch).pipe(Effect.provideService(EventId.Generator, skewed))
                }
              )
            ),
            { concurrency: "unbounded" }
          )
          let total = 0
          for (const cartId of carts) {
            const read = yield* store.readStream(cartId)
            total += read.length
            expect(read.map((e) => e.streamVersion)).toEqual(read.map((_, i) => i + 1))
            expect(isSorted(read.map((e) => e.eventId))).toBe(true)
          }
          expect(total).toBe(
            Array.from({ length: appenders * appendsEach }, (_, n) => 1 + ((Math.floor(n / appendsEach) + (n % appendsEach)) % 3)).reduce(
              (a, b) => a + b,
              0
            )
          )
        })
      )

      it.effect("stores caller-supplied UUIDv7 ids as they are, also below the stream's highest id", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const add = (sku: string) => ItemAdded.make({ cartId, sku, quantity: 1 })
          yield* store.append(cartId, [add("a"), add("b")])
          const imported = EventId.makeAt(Date.now() - 86_400_000)
          const upper = imported.toUpperCase()
          const result = yield* store.append(cartId, [{ ...add("old"), eventId: upper }, add("after")], { expectedVersion: 2 })
          expect(result.events.map((e) => e.streamVersion)).toEqual([3, 4])
          expect(result.events[0]!.eventId).toBe(imported)
          expect(result.events[0]!.metadata.correlationId).toBe(imported)
          const read = yield* store.readStream(cartId)
          expect(read.map((e) => e.eventId)).toEqual([read[0]!.eventId, read[1]!.eventId, imported, result.events[1]!.eventId])
          // The store's own id after an import still goes above every id of the stream.
          expect(result.events[1]!.eventId > read[1]!.eventId).toBe(true)
        })
      )

      it.effect("refuses supplied ids that are not UUIDv7 or already used, writing nothing", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const add = (sku: string, eventId?: string) => ({ ...ItemAdded.make({ cartId, sku, quantity: 1 }), eventId })
          const v4 = "3b241101-e2bb-4255-8caf-4136c566a962"
          expect(yield* Effect.flip(store.append(cartId, [add("a", v4)]))).toMatchObject({ _tag: "InvalidEventId", eventId: v4 })
          expect((yield* Effect.flip(store.append(cartId, [add("a", "x' or 1=1")])))._tag).toBe("InvalidEventId")
          const id = EventId.unsafeMake()
          expect(yield* Effect.flip(store.append(cartId, [add("a", id), add("b", id)]))).toMatchObject({
            _tag: "DuplicateEventId",
            eventIds: [id]
          })
          expect(yield* store.streamVersion(cartId)).toBe(0)
          const elsewhere = EventId.unsafeMake()
          const stored = yield* store.append(elsewhere, [ItemAdded.make({ cartId: elsewhere, sku: "z", quantity: 1 })])
          const taken = stored.events[0]!.eventId
          const error = yield* Effect.flip(store.append(cartId, [add("a"), add("b", taken)]))
          expect(error).toMatchObject({ _tag: "DuplicateEventId", eventIds: [taken] })
          expect(error.message).toContain(taken)
          expect(yield* store.streamVersion(cartId)).toBe(0)
        })
      )

      it.effect("refuses payloads jsonb cannot store (unpaired surrogates, deep nesting) with InvalidEventPayload", () =>
        Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const cartId = EventId.unsafeMake()
          const tag = <A, E extends { _tag: string }>(effect: Effect.Effect<A, E>) => Effect.map(Effect.flip(effect), (e) => e._tag)
          for (const sku of ["x\ud800y", "\udc00", "end\ud83d"]) {
            expect(yield* tag(store.append(cartId, [ItemAdded.make({ cartId, sku, quantity: 1 })]))).toBe("InvalidEventPayload")
          }
          expect(yield* tag(store.append(cartId, [NoteAdded.make({ cartId, note: { ["k\udfff"]: 1 } })]))).toBe("InvalidEventPayload")
          let deep: unknown = 1
          for (let i = 0; i < 1_100; i++) deep = [deep]
          expect(yield* tag(store.append(cartId, [NoteAdded.make({ cartId, note: deep })]))).toBe("InvalidEventPayload")
          expect(
            yield* tag(store.append(cartId, [ItemAdded.make({ cartId, sku: "a", quantity: 1 })], { scope: { userId: "u\ud800" } }))
          ).toBe("InvalidRequest")
          expect(yield* store.streamVersion(cartId)).toBe(0)
          // Well-formed pairs and moderate nesting are fine.
          let nested: unknown = "leaf 😀"
          for (let i = 0; i < 50; i++) nested = { n: nested }
          yield* store.append(cartId, [
            ItemAdded.make({ cartId, sku: "pair 😀 \ud83d\ude00", quantity: 1 }),
            NoteAdded.make({ cartId, note: nested })
          ])
          const read = yield* store.readStream(cartId)
          expect((read[0]!.payload as { sku: string }).sku).toBe("pair 😀 😀")
          expect((read[1]!.payload as { note: unknown }).note).toEqual(nested)
        })
      )
    })
  })
}
