import { describe, expect, it } from "@effect/vitest"
import { combine, type EventFacts, verdict } from "../src/internal/inquiryRule.js"

const facts = (overrides: Partial<EventFacts>): EventFacts => ({
  key: "order_summary",
  event_types: null,
  retired: false,
  event_id: "e",
  event_type: "OrderPlaced",
  committed: true,
  has_work: false,
  work_processed: false,
  dead_lettered: false,
  cursor_past: false,
  stream_id: "s",
  failing_event_id: null,
  failing_error: null,
  failing_attempts: null,
  failing_next_attempt_at: null,
  ...overrides
})
const handles = (type: string) => type === "OrderPlaced"

describe("the database sync rule", () => {
  it("an event the database does not have is pending, whatever else is said", () => {
    expect(verdict(facts({ committed: false, event_type: null, cursor_past: true }), handles)).toBe("pending")
  })
  it("a work row decides while it exists: unprocessed -> pending, marked processed (debug) -> processed", () => {
    expect(verdict(facts({ has_work: true, cursor_past: true }), handles)).toBe("pending")
    expect(verdict(facts({ has_work: true, work_processed: true }), handles)).toBe("processed")
    expect(verdict(facts({ has_work: true, dead_lettered: true }), handles)).toBe("pending") // re-queued dead letter
  })
  it("an unprocessed work row held by a failing head (itself or an earlier event of its stream) -> failing", () => {
    const failing = { failing_event_id: "head", failing_error: "boom", failing_attempts: 2 }
    expect(verdict(facts({ has_work: true, ...failing }), handles)).toBe("failing")
    expect(verdict(facts({ has_work: true, work_processed: true, ...failing }), handles)).toBe("processed")
    expect(verdict(facts({ ...failing, cursor_past: true }), handles)).toBe("processed") // no work row: not held
  })
  it("no work row: dead letter -> deadLettered; not handled -> processed; cursor past -> processed; else pending", () => {
    expect(verdict(facts({ dead_lettered: true, cursor_past: true }), handles)).toBe("deadLettered")
    expect(verdict(facts({ event_type: "Noted" }), handles)).toBe("processed")
    expect(verdict(facts({ cursor_past: true }), handles)).toBe("processed")
    expect(verdict(facts({}), handles)).toBe("pending")
  })
  it("a retired key counts as done for every committed event; an uncommitted one stays pending", () => {
    expect(verdict(facts({ retired: true, has_work: true }), handles)).toBe("processed")
    expect(verdict(facts({ retired: true, committed: false, event_type: null }), handles)).toBe("pending")
  })
  it("over serving versions: dead-lettered if any key dead-lettered it, failing if any fails at it, pending if any has it pending, else processed", () => {
    expect(combine(["processed", "processed"])).toBe("processed")
    expect(combine(["processed", "pending"])).toBe("pending")
    expect(combine(["pending", "deadLettered", "processed"])).toBe("deadLettered")
    expect(combine(["processed", "failing", "pending"])).toBe("failing")
    expect(combine(["pending", "failing"])).toBe("failing")
    expect(combine(["failing", "deadLettered"])).toBe("deadLettered")
  })
})
