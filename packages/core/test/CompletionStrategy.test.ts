import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Ref } from "effect"
import { TestClock } from "effect/testing"
import * as BatchedCompletionStrategy from "../src/internal/batchedCompletionStrategy.js"
import type * as CompletionStrategy from "../src/CompletionStrategy.js"
import * as InstantCompletionStrategy from "../src/internal/instantCompletionStrategy.js"
import { PerspectiveStatus } from "../src/PerspectiveStatus.js"
import * as WorkerOptions from "../src/WorkerOptions.js"

const completion = (n: number): CompletionStrategy.PerspectiveCompletion => ({
  workIds: [`w${n}`],
  streamId: `s${n}`,
  perspectiveName: "orders",
  lastEventId: `e${n}`,
  status: PerspectiveStatus.Completed
})
const failure = (n: number): CompletionStrategy.PerspectiveFailure => ({
  workId: `w${n}`,
  streamId: `s${n}`,
  perspectiveName: "orders",
  error: "boom"
})

/** A reporter that records every call, standing in for the database. */
const recordingReporter = Effect.gen(function* () {
  const calls = yield* Ref.make<ReadonlyArray<string>>([])
  const failNext = yield* Ref.make(false)
  const reporter: CompletionStrategy.CompletionReporter<string> = {
    reportCompletions: (cs) =>
      Effect.gen(function* () {
        if (yield* Ref.getAndSet(failNext, false)) return yield* Effect.fail("db down")
        yield* Ref.update(calls, (c) => [...c, `completions:${cs.map((x) => x.workIds.join()).join("|")}`])
      }),
    reportFailures: (fs) => Ref.update(calls, (c) => [...c, `failures:${fs.map((x) => x.workId).join("|")}`])
  }
  return { reporter, calls: Ref.get(calls), failNext: Ref.set(failNext, true) }
})

describe("BatchedCompletionStrategy", () => {
  it.effect("reporting touches only memory; pending items are returned", () =>
    Effect.gen(function* () {
      const { reporter, calls } = yield* recordingReporter
      const strategy = yield* BatchedCompletionStrategy.make()
      yield* strategy.reportCompletion(completion(1), reporter)
      yield* strategy.reportFailure(failure(2), reporter)
      expect(yield* calls).toEqual([])
      expect((yield* strategy.pendingCompletions).map((t) => t.item)).toEqual([completion(1)])
      expect((yield* strategy.pendingFailures).map((t) => t.item)).toEqual([failure(2)])
    })
  )

  it.effect("sent -> acknowledged -> cleared leaves nothing", () =>
    Effect.gen(function* () {
      const { reporter } = yield* recordingReporter
      const strategy = yield* BatchedCompletionStrategy.make()
      yield* strategy.reportCompletion(completion(1), reporter)
      yield* strategy.reportFailure(failure(2), reporter)
      const cs = yield* strategy.pendingCompletions
      const fs = yield* strategy.pendingFailures
      yield* strategy.markAsSent(cs, fs)
      expect(yield* strategy.pendingCompletions).toEqual([])
      yield* strategy.markAsAcknowledged(cs, fs)
      expect(yield* strategy.clearAcknowledged).toBe(2)
      expect(yield* strategy.clearAcknowledged).toBe(0)
      expect(yield* strategy.resetStale).toBe(0)
      expect(yield* strategy.pendingCompletions).toEqual([])
      expect(yield* strategy.pendingFailures).toEqual([])
    })
  )

  it.effect("acknowledgement is by item, not by count: out-of-order acks clear the right items", () =>
    Effect.gen(function* () {
      const { reporter } = yield* recordingReporter
      const strategy = yield* BatchedCompletionStrategy.make()
      yield* strategy.reportCompletion(completion(1), reporter)
      const batchA = yield* strategy.pendingCompletions
      yield* strategy.markAsSent(batchA, [])
      yield* strategy.reportCompletion(completion(2), reporter)
      const batchB = yield* strategy.pendingCompletions
      yield* strategy.markAsSent(batchB, [])
      // the newer batch is acknowledged first; a count-based ack would clear completion 1 instead
      yield* strategy.markAsAcknowledged(batchB, [])
      expect(yield* strategy.clearAcknowledged).toBe(1)
      yield* TestClock.adjust(Duration.seconds(1))
      expect(yield* strategy.resetStale).toBe(1)
      expect((yield* strategy.pendingCompletions).map((t) => t.item.workIds)).toEqual([["w1"]])
    })
  )

  it.effect("stale sent items return to pending with exponential backoff", () =>
    Effect.gen(function* () {
      const { reporter } = yield* recordingReporter
      const strategy = yield* BatchedCompletionStrategy.make(WorkerOptions.defaultRetryOptions) // 1 s, x2, cap 60 s
      yield* strategy.reportCompletion(completion(1), reporter)
      const resend = Effect.gen(function* () {
        yield* strategy.markAsSent(yield* strategy.pendingCompletions, [])
      })
      yield* resend
      yield* TestClock.adjust(Duration.millis(999))
      expect(yield* strategy.resetStale).toBe(0)
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* strategy.resetStale).toBe(1) // first retry after 1 s
      const [tracked] = yield* strategy.pendingCompletions
      expect(tracked?.retryCount).toBe(1)
      yield* resend
      yield* TestClock.adjust(Duration.millis(1999))
      expect(yield* strategy.resetStale).toBe(0)
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* strategy.resetStale).toBe(1) // second retry after 2 s
    })
  )

  it("backoff grows by the multiplier and stops at the cap; disabled backoff is fixed", () => {
    const options = WorkerOptions.defaultRetryOptions
    expect([0, 1, 2, 5, 6, 10].map((n) => BatchedCompletionStrategy.staleAfterMillis(options, n))).toEqual([
      1000, 2000, 4000, 32_000, 60_000, 60_000
    ])
    const fixed = { ...options, enableExponentialBackoff: false }
    expect(BatchedCompletionStrategy.staleAfterMillis(fixed, 5)).toBe(1000)
  })

  it.effect("flush sends everything pending in one call per kind and leaves nothing behind", () =>
    Effect.gen(function* () {
      const { reporter, calls } = yield* recordingReporter
      const strategy = yield* BatchedCompletionStrategy.make()
      yield* strategy.reportCompletion(completion(1), reporter)
      yield* strategy.reportCompletion(completion(2), reporter)
      yield* strategy.reportFailure(failure(3), reporter)
      expect(yield* strategy.flush(reporter)).toEqual({ completions: 2, failures: 1 })
      expect(yield* calls).toEqual(["completions:w1|w2", "failures:w3"])
      expect(yield* strategy.flush(reporter)).toEqual({ completions: 0, failures: 0 })
      expect(yield* strategy.resetStale).toBe(0)
    })
  )

  it.effect("a failed flush keeps the items as sent; they come back after the backoff", () =>
    Effect.gen(function* () {
      const { reporter, calls, failNext } = yield* recordingReporter
      const strategy = yield* BatchedCompletionStrategy.make()
      yield* strategy.reportCompletion(completion(1), reporter)
      yield* failNext
      expect(yield* Effect.flip(strategy.flush(reporter))).toBe("db down")
      expect(yield* strategy.pendingCompletions).toEqual([])
      yield* TestClock.adjust(Duration.seconds(1))
      expect(yield* strategy.resetStale).toBe(1)
      yield* strategy.flush(reporter)
      expect(yield* calls).toEqual(["completions:w1"])
    })
  )
})

describe("InstantCompletionStrategy", () => {
  it.effect("each report calls the coordinator at once and nothing is ever pending", () =>
    Effect.gen(function* () {
      const { reporter, calls } = yield* recordingReporter
      const strategy = InstantCompletionStrategy.instant
      yield* strategy.reportCompletion(completion(1), reporter)
      expect(yield* calls).toEqual(["completions:w1"])
      yield* strategy.reportFailure(failure(2), reporter)
      expect(yield* calls).toEqual(["completions:w1", "failures:w2"])
      expect(yield* strategy.pendingCompletions).toEqual([])
      expect(yield* strategy.pendingFailures).toEqual([])
      expect(yield* strategy.flush(reporter)).toEqual({ completions: 0, failures: 0 })
      expect(yield* calls).toHaveLength(2)
    })
  )

  it.effect("a coordinator failure surfaces to the reporter's caller", () =>
    Effect.gen(function* () {
      const { reporter, failNext } = yield* recordingReporter
      yield* failNext
      expect(yield* Effect.flip(InstantCompletionStrategy.instant.reportCompletion(completion(1), reporter))).toBe("db down")
    })
  )
})
