/**
 * The EventStore contract's tests of input: invalid events, hostile arguments and payloads jsonb cannot store are
 * refused with typed errors, writing nothing; strings that look like SQL are stored verbatim.
 */
import { EventId, EventStore } from "@whizbang/core"
import { Effect } from "effect"
import { ItemAdded, maxPayloadBytes, NoteAdded, type Suite } from "./contractFixtures.js"

/** Invalid batches and hostile input refused with typed errors; SQL-like strings stored verbatim. */
export const invalidInput = ({ it, expect }: Suite): void => {
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
      expect(yield* tag(store.append(cartId, [ItemAdded.make({ cartId, sku: "nul\u0000byte", quantity: 1 })]))).toBe("InvalidEventPayload")
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
}

/** Payloads jsonb cannot store refused with InvalidEventPayload; well-formed ones stored. */
export const unstorablePayloads = ({ it, expect }: Suite): void => {
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
      expect(yield* tag(store.append(cartId, [ItemAdded.make({ cartId, sku: "a", quantity: 1 })], { scope: { userId: "u\ud800" } }))).toBe(
        "InvalidRequest"
      )
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
}
