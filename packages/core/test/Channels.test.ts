import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Queue, Ref, Schedule } from "effect"
import { TestClock } from "effect/testing"
import * as BatchFlusher from "../src/BatchFlusher.js"
import * as Channels from "../src/Channels.js"
import { PerspectiveStatus } from "../src/PerspectiveStatus.js"

describe("Channels", () => {
  it.effect("every channel is bounded: a full channel makes offer wait (back-pressure)", () =>
    Effect.gen(function*() {
      const channels = yield* Channels.make({ drain: 2 })
      yield* Queue.offerAll(channels.drain, ["s1", "s2"])
      const blocked = yield* Effect.forkChild(Queue.offer(channels.drain, "s3"))
      yield* Effect.yieldNow
      expect(blocked.pollUnsafe()).toBeUndefined()
      expect(yield* Queue.size(channels.drain)).toBe(2)
      expect(yield* Queue.take(channels.drain)).toBe("s1")
      yield* Fiber.join(blocked)
      expect(yield* Queue.takeAll(channels.drain)).toEqual(["s2", "s3"])
    }))

  it.effect("uses the default capacities", () =>
    Effect.gen(function*() {
      const channels = yield* Channels.make()
      for (const [name, capacity] of Object.entries(Channels.defaultCapacities)) {
        expect(channels[name as keyof Channels.Shape].capacity).toBe(capacity)
      }
    }))

  it.effect("an invalid capacity is a defect, not a silent fallback", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Channels.make({ failures: 0 }))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(exit)).toContain("channel capacity failures must be a positive integer, got 0")
    }))

  it.effect("completions reach the completion channel through the layer", () =>
    Effect.gen(function*() {
      const channels = yield* Channels.Channels
      const completion = { workIds: ["w1"], streamId: "s1", perspectiveName: "orders", lastEventId: "e1", status: PerspectiveStatus.Completed }
      yield* Queue.offer(channels.completions, completion)
      expect(yield* Queue.take(channels.completions)).toEqual(completion)
    }).pipe(Effect.provide(Channels.layer())))
})

describe("BatchFlusher", () => {
  it.effect("flushes everything available, up to maxBatchSize, in one call", () =>
    Effect.gen(function*() {
      const queue = yield* Queue.bounded<number>(10)
      const calls = yield* Ref.make<ReadonlyArray<ReadonlyArray<number>>>([])
      const options = { maxBatchSize: 3, flush: (batch: ReadonlyArray<number>) => Ref.update(calls, (c) => [...c, batch]) }
      yield* Queue.offerAll(queue, [1, 2, 3, 4])
      expect(yield* BatchFlusher.flushOnce(queue, options)).toBe(3)
      expect(yield* BatchFlusher.flushOnce(queue, options)).toBe(1)
      expect(yield* Ref.get(calls)).toEqual([[1, 2, 3], [4]])
    }))

  it.effect("a failing flush is retried with backoff and the batch is never dropped", () =>
    Effect.gen(function*() {
      const queue = yield* Queue.bounded<string>(10)
      const attempts = yield* Ref.make(0)
      const delivered = yield* Ref.make<ReadonlyArray<string>>([])
      const flush = (batch: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const n = yield* Ref.updateAndGet(attempts, (a) => a + 1)
          if (n < 3) return yield* Effect.fail("db down")
          yield* Ref.set(delivered, batch)
        })
      yield* Queue.offerAll(queue, ["a", "b"])
      const fiber = yield* Effect.forkChild(BatchFlusher.flushOnce(queue, { flush }))
      yield* Effect.yieldNow
      expect(yield* Ref.get(attempts)).toBe(1)
      yield* TestClock.adjust(Duration.millis(100)) // first backoff
      expect(yield* Ref.get(attempts)).toBe(2)
      yield* TestClock.adjust(Duration.millis(200)) // doubled
      expect(yield* Fiber.join(fiber)).toBe(2)
      expect(yield* Ref.get(delivered)).toEqual(["a", "b"])
    }))

  it.effect("a custom finite retry gives up with the flush error", () =>
    Effect.gen(function*() {
      const queue = yield* Queue.bounded<string>(10)
      yield* Queue.offer(queue, "a")
      const error = yield* Effect.flip(
        BatchFlusher.flushOnce(queue, { flush: () => Effect.fail("nope"), retry: Schedule.recurs(0) })
      )
      expect(error).toBe("nope")
    }))

  it.effect("run keeps flushing as items arrive", () =>
    Effect.gen(function*() {
      const queue = yield* Queue.bounded<number>(10)
      const seen = yield* Ref.make<ReadonlyArray<number>>([])
      const fiber = yield* Effect.forkChild(BatchFlusher.run(queue, { flush: (b) => Ref.update(seen, (s) => [...s, ...b]) }))
      yield* Queue.offer(queue, 1)
      yield* Effect.yieldNow
      yield* Queue.offer(queue, 2)
      yield* Effect.yieldNow
      expect(yield* Ref.get(seen)).toEqual([1, 2])
      yield* Fiber.interrupt(fiber)
    }))
})
