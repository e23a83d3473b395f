// The claim's background tier rests after a claim whose background streams were all blocked (a replay's planned
// history): which claims start a rest, and that a rest ends after `restMillis` (TestClock).
import { describe, expect, it } from "@effect/vitest"
import type { WorkCoordinator } from "@whizbang/core"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import * as BackgroundRest from "../src/internal/backgroundRest.js"

const row = (streamId: string, fires: boolean, blocked: boolean): WorkCoordinator.PendingEvent => ({
  workId: `${streamId}-${String(fires)}-${String(blocked)}`,
  streamId,
  perspectiveName: fires ? "orders" : "orders__v2",
  eventId: "0190a1b2-0000-7000-8000-000000000001",
  eventType: "Placed",
  payload: {},
  attempts: 0,
  fires,
  blocked
})

describe("background rest", () => {
  it("starts when the claim took streams with nothing to apply and no applicable background row", () => {
    expect(BackgroundRest.foundNothing([], [])).toBe(false)
    // Every stream came back with rows (live or background that can move): no rest.
    expect(BackgroundRest.foundNothing(["a"], [row("a", true, false)])).toBe(false)
    expect(BackgroundRest.foundNothing(["a", "b"], [row("a", true, false), row("b", false, false)])).toBe(false)
    // A stream with nothing fetched (its history still planned), the others live: rest.
    expect(BackgroundRest.foundNothing(["a", "b"], [row("a", true, false)])).toBe(true)
    expect(BackgroundRest.foundNothing(["a", "b"], [])).toBe(true)
    // Background work it can apply on another stream: no rest.
    expect(BackgroundRest.foundNothing(["a", "b"], [row("b", false, false)])).toBe(false)
    // A blocked background row is not work it can apply.
    expect(BackgroundRest.foundNothing(["a", "b"], [row("a", true, false), row("b", false, true)])).toBe(false)
    expect(BackgroundRest.foundNothing(["a", "b", "c"], [row("a", true, false), row("b", false, true)])).toBe(true)
  })

  it.effect("a rest closes the background tier for restMillis, then opens it again", () =>
    Effect.gen(function* () {
      const rest = BackgroundRest.make()
      expect(yield* rest.open).toBe(true)
      yield* rest.after(["a"], [row("a", false, false)])
      expect(yield* rest.open).toBe(true)
      yield* rest.after(["a"], [])
      expect(yield* rest.open).toBe(false)
      yield* TestClock.adjust(BackgroundRest.restMillis - 1)
      expect(yield* rest.open).toBe(false)
      yield* TestClock.adjust(1)
      expect(yield* rest.open).toBe(true)
    })
  )
})
