import { describe, expect, it } from "@effect/vitest"
import { type Cause, Duration, Effect, Fiber, Option, Queue } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import * as SlidingWindowBatcher from "../src/internal/slidingWindowBatcher.js"

const ms = Duration.millis

describe("SlidingWindowBatcher", () => {
  it.effect("closes after a quiet sliding window (default 300 ms)", () =>
    Effect.gen(function* () {
      const queue = yield* Queue.bounded<string>(100)
      const fiber = yield* Effect.forkChild(SlidingWindowBatcher.take(queue))
      yield* Queue.offer(queue, "a")
      yield* TestClock.adjust(ms(299))
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(ms(1))
      const batch = yield* Fiber.join(fiber)
      expect(batch.items).toEqual(["a"])
    })
  )

  it.effect("eagerWhenIdle: an idle take closes at the first arrival, with what is already queued, without waiting", () =>
    Effect.gen(function* () {
      const queue = yield* Queue.bounded<string>(100)
      const fiber = yield* Effect.forkChild(SlidingWindowBatcher.take(queue, { eagerWhenIdle: true }))
      yield* Effect.yieldNow // the take starts on an empty queue: nothing is flowing
      yield* Queue.offerAll(queue, ["a", "b", "a"])
      const batch = yield* Fiber.join(fiber) // no clock adjustment: a window would never close
      expect(batch).toEqual({ items: ["a", "b"], received: 3 })
    })
  )

  it.effect("eagerWhenIdle: items already waiting (work flowing) are batched with the window and maxSize", () =>
    Effect.gen(function* () {
      const queue = yield* Queue.bounded<string>(100)
      yield* Queue.offerAll(queue, ["a", "b", "c"])
      const fiber = yield* Effect.forkChild(SlidingWindowBatcher.take(queue, { eagerWhenIdle: true, maxSize: 10 }))
      yield* TestClock.adjust(ms(200))
      yield* Queue.offer(queue, "d")
      yield* TestClock.adjust(ms(299))
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(ms(1))
      expect((yield* Fiber.join(fiber)).items).toEqual(["a", "b", "c", "d"])
    })
  )

  it.effect("eagerWhenIdle: the idle batch still respects maxSize, leaving the rest queued", () =>
    Effect.gen(function* () {
      const queue = yield* Queue.bounded<string>(100)
      const fiber = yield* Effect.forkChild(SlidingWindowBatcher.take(queue, { eagerWhenIdle: true, maxSize: 2 }))
      yield* Effect.yieldNow
      yield* Queue.offerAll(queue, ["a", "b", "c"])
      expect((yield* Fiber.join(fiber)).items).toEqual(["a", "b"])
      expect(yield* Queue.size(queue)).toBe(1)
    })
  )

  it.effect("keepOpen: a batch stays open only while it holds, and closes at once (no clock) when it turns false", () =>
    Effect.gen(function* () {
      const queue = yield* Queue.bounded<string>(100)
      let othersBusy = true
      yield* Queue.offerAll(queue, ["a", "b"]) // work is flowing
      const fiber = yield* Effect.forkChild(SlidingWindowBatcher.take(queue, { eagerWhenIdle: true, keepOpen: () => othersBusy }))
      yield* TestClock.adjust(ms(100))
      expect(fiber.pollUnsafe()).toBeUndefined() // every other consumer busy: the window holds
      othersBusy = false // a consumer is free: waiting longer would only add latency
      yield* Queue.offer(queue, "c")
      expect((yield* Fiber.join(fiber)).items).toEqual(["a", "b", "c"])
    })
  )

  it.effect("keepOpen: turning false during a wait closes the batch within 5 ms, not at the end of the window", () =>
    Effect.gen(function* () {
      const queue = yield* Queue.bounded<string>(100)
      let othersBusy = true
      yield* Queue.offerAll(queue, ["a", "b"]) // work is flowing
      const fiber = yield* Effect.forkChild(SlidingWindowBatcher.take(queue, { eagerWhenIdle: true, keepOpen: () => othersBusy }))
      yield* TestClock.adjust(ms(100))
      expect(fiber.pollUnsafe()).toBeUndefined() // every other consumer busy: the 300 ms window holds
      othersBusy = false // a consumer became free, and no item arrives to end the wait
      yield* TestClock.adjust(ms(5))
      expect((yield* Fiber.join(fiber)).items).toEqual(["a", "b"])
    })
  )

  it.effect("each arrival resets the window", () =>
    Effect.gen(function* () {
      const queue = yield* Queue.bounded<string>(100)
      const fiber = yield* Effect.forkChild(SlidingWindowBatcher.take(queue))
      yield* Queue.offer(queue, "a")
      yield* TestClock.adjust(ms(200))
      yield* Queue.offer(queue, "b")
      yield* TestClock.adjust(ms(200)) // 400 ms after "a", 200 after "b": still open
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* Queue.offer(queue, "c")
      yield* TestClock.adjust(ms(300))
      expect((yield* Fiber.join(fiber)).items).toEqual(["a", "b", "c"])
    })
  )

  it.effect("a steady trickle is cut at maxWait", () =>
    Effect.gen(function* () {
      const queue = yield* Queue.bounded<number>(100)
      const fiber = yield* Effect.forkChild(SlidingWindowBatcher.take(queue, { slidingWindow: ms(300), maxWait: ms(1000) }))
      for (let i = 0; i < 10; i++) {
        yield* Queue.offer(queue, i)
        yield* TestClock.adjust(ms(200))
      }
      const batch = yield* Fiber.join(fiber)
      // items at t = 0, 200, ..., 800 ms made it; the batch closed at 1000 ms, later items wait for the next batch
      expect(batch.items).toEqual([0, 1, 2, 3, 4])
      expect(yield* Queue.size(queue)).toBe(5)
    })
  )

  it.effect("closes at maxSize distinct keys and leaves the rest queued", () =>
    Effect.gen(function* () {
      const queue = yield* Queue.bounded<number>(100)
      yield* Queue.offerAll(queue, [1, 2, 3, 4, 5])
      const batch = yield* SlidingWindowBatcher.take(queue, { maxSize: 3 })
      expect(batch.items).toEqual([1, 2, 3])
      expect(yield* Queue.size(queue)).toBe(2)
    })
  )

  it.effect("coalesces duplicates by key, keeping first-arrival order", () =>
    Effect.gen(function* () {
      const queue = yield* Queue.bounded<{ stream: string; n: number }>(100)
      yield* Queue.offerAll(queue, [
        { stream: "s1", n: 1 },
        { stream: "s2", n: 2 },
        { stream: "s1", n: 3 }
      ])
      const fiber = yield* Effect.forkChild(SlidingWindowBatcher.take(queue, { key: (x) => x.stream, maxSize: 3 }))
      yield* TestClock.adjust(ms(300))
      const batch = yield* Fiber.join(fiber)
      expect(batch.items).toEqual([
        { stream: "s1", n: 1 },
        { stream: "s2", n: 2 }
      ])
      expect(batch.received).toBe(3) // the duplicate did not count towards maxSize
    })
  )

  it.effect("returns what it has when the queue ends mid-batch", () =>
    Effect.gen(function* () {
      const queue = yield* Queue.make<string, Cause.Done>({ capacity: 10 })
      yield* Queue.offerAll(queue, ["a", "b"])
      yield* Queue.end(queue)
      const batch = yield* SlidingWindowBatcher.take(queue)
      expect(batch.items).toEqual(["a", "b"])
    })
  )

  it.effect("property: batches never reorder, lose or invent items", () =>
    Effect.gen(function* () {
      const samples = fc.sample(
        fc.record({
          items: fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 60 }),
          gaps: fc.array(fc.integer({ min: 0, max: 500 }), { minLength: 60, maxLength: 60 }),
          maxSize: fc.integer({ min: 1, max: 10 })
        }),
        { numRuns: 60, seed: 42 }
      )
      for (const { items, gaps, maxSize } of samples) {
        const queue = yield* Queue.bounded<number>(100)
        const batches: Array<SlidingWindowBatcher.Batch<number>> = []
        const consumer = yield* Effect.forkChild(
          Effect.forever(SlidingWindowBatcher.take(queue, { maxSize, maxWait: ms(1000) }).pipe(Effect.map((b) => batches.push(b))))
        )
        for (let i = 0; i < items.length; i++) {
          yield* Queue.offer(queue, items[i]!)
          yield* TestClock.adjust(ms(gaps[i]!))
        }
        yield* TestClock.adjust(ms(5000))
        yield* Fiber.interrupt(consumer)
        // each batch consumed the next `received` inputs and holds their distinct values in first-arrival order
        let cursor = 0
        for (const batch of batches) {
          const segment = items.slice(cursor, cursor + batch.received)
          cursor += batch.received
          expect(batch.items).toEqual([...new Set(segment)])
          expect(batch.items.length).toBeLessThanOrEqual(maxSize)
        }
        expect(cursor).toBe(items.length)
        expect(Option.isNone(yield* Queue.poll(queue))).toBe(true)
      }
    })
  )
})
