// The worker's state transitions (internal/workerState.ts), one at a time.
import { describe, expect, it } from "vitest"
import { cycled, initialProgress, polled, Streams, verdict, working } from "../src/internal/workerState.js"
import type { PendingEvent } from "../src/WorkCoordinator.js"

const row = (streamId: string, eventId: string) => ({ streamId, eventId }) as unknown as PendingEvent

describe("worker progress", () => {
  it("turns idle after the threshold of empty polls, and active at the first poll that finds work", () => {
    let p = initialProgress
    p = polled(p, verdict(p, { found: 3, inFlight: false }, 2))
    expect(p).toMatchObject({ polls: 1, emptyPolls: 0, idle: false })
    p = polled(p, verdict(p, { found: 0, inFlight: true }, 2))
    expect(p).toMatchObject({ polls: 2, emptyPolls: 0, idle: false })
    p = polled(p, verdict(p, { found: 0, inFlight: false }, 2))
    expect(p).toMatchObject({ polls: 3, emptyPolls: 1, idle: false })
    p = polled(p, verdict(p, { found: 0, inFlight: false }, 2))
    expect(p).toMatchObject({ polls: 4, emptyPolls: 2, idle: true })
    p = cycled(p, { eventsApplied: 5, failures: 1, deduped: 2 })
    expect(working(p)).toMatchObject({ emptyPolls: 0, idle: false, eventsApplied: 5, failures: 1, deduped: 2 })
  })
})

describe("worker streams", () => {
  it("queues a stream once, gives it to one consumer, and its prefetched events to its first cycle only", () => {
    const s = new Streams(100, 1_000)
    s.prefetch(["a", "b"], [row("a", "1"), row("a", "2")])
    expect(s.enqueue(["a", "b"])).toEqual(["a", "b"])
    expect(s.enqueue(["a", "c"])).toEqual(["c"])
    expect(s.exclusions(0).sort()).toEqual(["a", "b", "c"])
    const first = s.take(["a", "b"])
    expect(first.mine).toEqual(["a", "b"])
    expect(first.prefetched.get("a")).toHaveLength(2)
    expect(first.prefetched.get("b")).toEqual([])
    expect(s.inCycle()).toBe(1)
    // Another consumer drained "a" too (a duplicate in its window): it skips it.
    const second = s.take(["a", "c"])
    expect(second.mine).toEqual(["c"])
    expect(s.othersWaiting()).toBe(false)
    s.release(["a", "b"], first)
    s.release(["a", "c"], second)
    expect(s.inCycle()).toBe(0)
    expect(s.exclusions(0)).toEqual([])
    expect(s.take(["a"]).prefetched.size).toBe(0)
  })

  it("holds a stalled stream back from claims, does not count its re-tries as work, and reports when it moves", () => {
    const s = new Streams(100, 1_000)
    expect(s.cycled(["a", "b"], new Set(["a"]), 0)).toBe(false)
    expect(s.exclusions(50)).toEqual(["a"])
    expect(s.exclusions(150)).toEqual([])
    expect(s.pollOutcome(["a"])).toEqual({ found: 0, inFlight: false })
    s.enqueue(["a"])
    expect(s.pollOutcome([])).toEqual({ found: 0, inFlight: false })
    expect(s.take(["a"]).counts).toBe(false)
    expect(s.cycled(["a"], new Set(), 200)).toBe(true)
    expect(s.pollOutcome(["a"])).toEqual({ found: 1, inFlight: true })
  })

  it("forgets a stalled stream that was not claimed again within the forget period", () => {
    const s = new Streams(100, 1_000)
    s.cycled(["a"], new Set(["a"]), 0)
    s.exclusions(2_000)
    expect(s.pollOutcome(["a"]).found).toBe(1)
  })
})
