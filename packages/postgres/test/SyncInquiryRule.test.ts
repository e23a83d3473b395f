import { describe, expect, it } from "@effect/vitest"
import { PgOperations } from "@whizbang/postgres/internal"

const { combine, verdict } = PgOperations.SyncInquiry
type EventFacts = PgOperations.SyncInquiry.EventFacts

const facts = (overrides: Partial<EventFacts>): EventFacts => ({
  key: "order_summary",
  eventTypes: null,
  retired: false,
  eventId: "e",
  eventType: "OrderPlaced",
  committed: true,
  hasWork: false,
  workProcessed: false,
  deadLettered: false,
  cursorPast: false,
  streamId: "s",
  failingEventId: null,
  failingError: null,
  failingAttempts: null,
  failingNextAttemptAt: null,
  ...overrides
})
const handles = (type: string) => type === "OrderPlaced"

describe("the database sync rule", () => {
  it("an event the database does not have is pending, whatever else is said", () => {
    expect(verdict(facts({ committed: false, eventType: null, cursorPast: true }), handles)).toBe("pending")
  })
  it("a work row decides while it exists: unprocessed -> pending, marked processed (debug) -> processed", () => {
    expect(verdict(facts({ hasWork: true, cursorPast: true }), handles)).toBe("pending")
    expect(verdict(facts({ hasWork: true, workProcessed: true }), handles)).toBe("processed")
    expect(verdict(facts({ hasWork: true, deadLettered: true }), handles)).toBe("pending") // re-queued dead letter
  })
  it("an unprocessed work row held by a failing head (itself or an earlier event of its stream) -> failing", () => {
    const failing = { failingEventId: "head", failingError: "boom", failingAttempts: 2 }
    expect(verdict(facts({ hasWork: true, ...failing }), handles)).toBe("failing")
    expect(verdict(facts({ hasWork: true, workProcessed: true, ...failing }), handles)).toBe("processed")
    expect(verdict(facts({ ...failing, cursorPast: true }), handles)).toBe("processed") // no work row: not held
  })
  it("no work row: dead letter -> deadLettered; not handled -> processed; cursor past -> processed; else pending", () => {
    expect(verdict(facts({ deadLettered: true, cursorPast: true }), handles)).toBe("deadLettered")
    expect(verdict(facts({ eventType: "Noted" }), handles)).toBe("processed")
    expect(verdict(facts({ cursorPast: true }), handles)).toBe("processed")
    expect(verdict(facts({}), handles)).toBe("pending")
  })
  it("a key the registry knows is judged by its registered event types, one it does not by the caller's", () => {
    expect(verdict(facts({ eventTypes: ["Noted"] }), handles)).toBe("processed")
    expect(verdict(facts({ eventTypes: ["Noted"], eventType: "Noted" }), handles)).toBe("pending")
    expect(verdict(facts({ eventTypes: null, eventType: "Noted" }), handles)).toBe("processed")
  })
  it("a retired key counts as done for every committed event; an uncommitted one stays pending", () => {
    expect(verdict(facts({ retired: true, hasWork: true }), handles)).toBe("processed")
    expect(verdict(facts({ retired: true, committed: false, eventType: null }), handles)).toBe("pending")
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
