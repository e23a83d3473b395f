import { describe, expect, it, vi } from "@effect/vitest"
import { EventId } from "@whizbang/core"
import { Effect } from "effect"
import { TestClock } from "effect/testing"

describe("EventId", () => {
  it("successor adds one to the 74 random bits, carrying into rand_a and the time, keeping version and variant", () => {
    expect(EventId.successor("01890000-0000-7000-8000-000000000000")).toBe("01890000-0000-7000-8000-000000000001")
    expect(EventId.successor("01890000-0000-7000-bfff-ffffffffffff")).toBe("01890000-0000-7001-8000-000000000000")
    expect(EventId.successor("01890000-0000-7fff-bfff-ffffffffffff")).toBe("01890000-0001-7000-8000-000000000000")
    expect(EventId.successor("01890000-0000-7abc-9fff-ffffffffffff")).toBe("01890000-0000-7abc-a000-000000000000")
  })

  it("successor of an id of another version is the first UUIDv7 of the next millisecond, above it", () => {
    const v4 = "f81d4fae-7dec-41d0-a765-00a0c91e6bf6"
    expect(EventId.successor(v4)).toBe("f81d4fae-7ded-7000-8000-000000000000")
    expect(EventId.successor(v4) > v4).toBe(true)
    const v8 = "01890000-0000-8fff-ffff-ffffffffffff"
    expect(EventId.successor(v8) > v8).toBe(true)
  })

  it("successor is the next id in sort order and always a UUIDv7", () => {
    for (let i = 0; i < 1_000; i++) {
      const id = EventId.unsafeMake()
      const next = EventId.successor(id)
      expect(EventId.isV7(next)).toBe(true)
      expect(next > id).toBe(true)
    }
  })

  it("isV7 accepts canonical UUIDv7 in either case and nothing else", () => {
    const id = EventId.unsafeMake()
    expect(EventId.isV7(id)).toBe(true)
    expect(EventId.isV7(id.toUpperCase())).toBe(true)
    expect(EventId.isV7("f81d4fae-7dec-41d0-a765-00a0c91e6bf6")).toBe(false)
    expect(EventId.isV7("01890000-0000-7000-c000-000000000000")).toBe(false)
    expect(EventId.isV7(id.replaceAll("-", ""))).toBe(false)
    expect(EventId.isV7(42)).toBe(false)
  })

  it.effect("fromClock stamps ids with the Effect clock", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(1_700_000_000_123)
      const id = yield* EventId.fromClock
      expect(parseInt(id.replaceAll("-", "").slice(0, 12), 16)).toBe(1_700_000_000_123)
      expect(EventId.isV7(id)).toBe(true)
    })
  )

  it.effect("the default Generator is the wall-clock, process-monotonic make", () =>
    Effect.gen(function* () {
      const generate = yield* EventId.Generator
      const ids = yield* Effect.all(Array.from({ length: 100 }, () => generate))
      expect(ids.every((id, i) => i === 0 || ids[i - 1]! < id)).toBe(true)
      expect(Math.abs(parseInt(ids[0]!.replaceAll("-", "").slice(0, 12), 16) - Date.now())).toBeLessThan(60_000)
    })
  )

  it("make stays above every id before it: many per millisecond, a frozen clock, a clock that goes back", () => {
    const ids: Array<string> = []
    for (let i = 0; i < 20_000; i++) ids.push(EventId.unsafeMake())
    const now = Date.now()
    const clock = vi.spyOn(Date, "now")
    try {
      clock.mockReturnValue(now + 1_000)
      for (let i = 0; i < 5_000; i++) ids.push(EventId.unsafeMake())
      clock.mockReturnValue(now - 60_000)
      for (let i = 0; i < 5_000; i++) ids.push(EventId.unsafeMake())
    } finally {
      clock.mockRestore()
    }
    ids.push(EventId.unsafeMake())
    expect(ids.every((id, i) => EventId.isV7(id) && (i === 0 || ids[i - 1]! < id))).toBe(true)
    // Not a counter alone: the low bits stay random.
    expect(new Set(ids.map((id) => id.slice(-8))).size).toBeGreaterThan(ids.length * 0.99)
  })
})
