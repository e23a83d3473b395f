/**
 * The EventStore contract's tests of appends and reads: a batch read back in order with its versions, ids, metadata
 * and scope, payloads decoded through their schema, expected versions under concurrency, and ranged reads.
 */
import { EventId, EventStore } from "@whizbang/core"
import { Effect, Exit, Schema } from "effect"
import { CartCheckedOut, ItemAdded, NoteAdded, type Suite } from "./contractFixtures.js"

const failureTag = <A, E extends { readonly _tag: string }>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.map((r) => (r._tag === "Fail" ? r.error._tag : r._tag)).join(",") : "success"

/** A batch appended and read back; payloads decoded and narrowed to their definitions. */
export const appendsAndReads = ({ it, expect }: Suite): void => {
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
}

/** The expected version enforced, and concurrent appends with and without it. */
export const expectedVersions = ({ it, expect }: Suite): void => {
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
}

/** Reads after a version and up to a limit. */
export const readRanges = ({ it, expect }: Suite): void => {
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
}
