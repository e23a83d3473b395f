import { describe, expect, it } from "@effect/vitest"
import { Duration } from "effect"
import * as SyncContext from "../src/SyncContext.js"
import * as SyncResult from "../src/SyncResult.js"

const fields = { elapsed: Duration.millis(120), eventsAwaited: 3, deadLettered: [], pending: [] }
const failure: SyncResult.FailingEvent = {
  eventId: "e1",
  streamId: "s1",
  perspectiveName: "P",
  error: "boom",
  attempts: 2,
  nextAttemptAt: new Date("2030-01-01T00:00:00Z")
}

describe("SyncResult", () => {
  it("outcomes are tagged and carry elapsed time and events awaited", () => {
    const dead = { ...fields, deadLettered: ["e1"] }
    const results = [
      SyncResult.Synced(fields),
      SyncResult.TimedOut(fields),
      SyncResult.NoPendingEvents(fields),
      SyncResult.DeadLettered(dead),
      SyncResult.Failing({ ...fields, pending: ["e2"], failing: [failure] })
    ]
    expect(results.map((r) => r._tag)).toEqual(["Synced", "TimedOut", "NoPendingEvents", "DeadLettered", "Failing"])
    expect(results.every((r) => r.eventsAwaited === 3 && Duration.toMillis(r.elapsed) === 120)).toBe(true)
    expect(results.map(SyncResult.$is("TimedOut"))).toEqual([false, true, false, false, false])
    const label = SyncResult.$match({
      Synced: () => "s",
      TimedOut: () => "t",
      NoPendingEvents: () => "n",
      DeadLettered: () => "d",
      Failing: ({ failing }) => `f ${failing[0]!.eventId}`
    })
    expect(results.map(label)).toEqual(["s", "t", "n", "d", "f e1"])
  })

  it("isFresh: only Synced and NoPendingEvents mean the read model has every awaited event", () => {
    const dead = SyncResult.DeadLettered({ ...fields, deadLettered: ["e1"] })
    const failing = SyncResult.Failing({ ...fields, pending: ["e2"], failing: [failure] })
    expect(
      [SyncResult.Synced(fields), SyncResult.NoPendingEvents(fields), SyncResult.TimedOut(fields), dead, failing].map(SyncResult.isFresh)
    ).toEqual([true, true, false, false, false])
  })
})

describe("SyncContext of a Failing wait", () => {
  it("names the failing event, its attempts, next attempt and error; isFailing", () => {
    const context = SyncContext.fromResult(SyncResult.Failing({ ...fields, pending: ["e2"], failing: [failure] }), {
      perspectiveName: "P"
    })
    expect(context).toMatchObject({ outcome: "Failing", failing: [failure] })
    expect(context.failureReason).toBe(
      "perspective P is failing: event e1 of stream s1 in P: 2 failed attempt(s), next at 2030-01-01T00:00:00.000Z: boom"
    )
    expect([SyncContext.isFailing(context), SyncContext.isSuccess(context), SyncContext.isDeadLettered(context)]).toEqual([
      true,
      false,
      false
    ])
  })
})

describe("SyncContext", () => {
  it("isSuccess only for Synced; isTimedOut only for TimedOut", () => {
    const outcomes = ["Synced", "TimedOut", "NoPendingEvents"] as const
    const contexts = outcomes.map((outcome) => SyncContext.make({ perspectiveName: "P", outcome }))
    expect(contexts.map(SyncContext.isSuccess)).toEqual([true, false, false])
    expect(contexts.map(SyncContext.isTimedOut)).toEqual([false, true, false])
  })

  it("defaults are zero", () => {
    const context = SyncContext.make({ perspectiveName: "P", outcome: "Synced" })
    expect(context.eventsAwaited).toBe(0)
    expect(Duration.toMillis(context.elapsed)).toBe(0)
    expect(context.failureReason).toBeUndefined()
  })

  it("fromResult: failure reason set on timeout, absent on success", () => {
    const timedOut = SyncContext.fromResult(SyncResult.TimedOut(fields), { perspectiveName: "Orders", streamId: "s" })
    expect(timedOut.failureReason).toContain("Orders")
    expect(timedOut.failureReason).toContain("120 ms")
    expect(timedOut).toMatchObject({ outcome: "TimedOut", eventsAwaited: 3, streamId: "s" })
    const synced = SyncContext.fromResult(SyncResult.Synced(fields), { perspectiveName: "Orders" })
    expect(synced.failureReason).toBeUndefined()
    expect("failureReason" in synced).toBe(false)
    expect(SyncContext.isSuccess(synced)).toBe(true)
    const dead = SyncContext.fromResult(SyncResult.DeadLettered({ ...fields, deadLettered: ["e1"] }), { perspectiveName: "Orders" })
    expect([SyncContext.isSuccess(dead), SyncContext.isTimedOut(dead), SyncContext.isDeadLettered(dead)]).toEqual([false, false, true])
    expect(dead.failureReason).toContain("e1")
  })
})
