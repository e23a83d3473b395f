/**
 * The EventStore contract's tests of event ids: the ids the store mints (above the stream's highest, in version
 * order, from `EventId.Generator`, whatever the clocks' skew) and the ids callers supply.
 */
import { EventId, EventStore } from "@whizbang/core"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { ItemAdded, type Suite } from "./contractFixtures.js"

/** A generator that always proposes the same id: every id after the first must be raised by the store. */
const constantGenerator = (id: string) => Effect.provideService(EventId.Generator, Effect.succeed(id))

const isSorted = (ids: ReadonlyArray<string>) => ids.every((id, i) => i === 0 || ids[i - 1]! < id)

/** Ids the store mints: above the highest, from EventId.Generator, in version order under skewed clocks. */
export const generatedIds = ({ it, expect }: Suite): void => {
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
}

/** Ids callers supply: stored as they are, or refused if not UUIDv7 or already used. */
export const suppliedIds = ({ it, expect }: Suite): void => {
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
}
