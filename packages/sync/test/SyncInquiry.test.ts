import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as SyncInquiry from "../src/SyncInquiry.js"
import { uuid } from "./support.js"

const result = (fields: Partial<SyncInquiry.SyncInquiryResult>): SyncInquiry.SyncInquiryResult => ({
  inquiryId: uuid(),
  pendingCount: 0,
  processedCount: 0,
  ...fields
})

describe("SyncInquiry.isFullySynced", () => {
  const [a, b] = [uuid(), uuid()]

  it("synced when nothing is pending (no expected ids)", () => {
    expect(SyncInquiry.isFullySynced(result({ pendingCount: 0 }))).toBe(true)
    expect(SyncInquiry.isFullySynced(result({ pendingCount: 2 }))).toBe(false)
  })

  it("with expected ids: synced only when all of them are processed", () => {
    expect(SyncInquiry.isFullySynced(result({ expectedEventIds: [a, b], processedEventIds: [a, b, uuid()] }))).toBe(true)
    expect(SyncInquiry.isFullySynced(result({ expectedEventIds: [a, b], processedEventIds: [a] }))).toBe(false)
    // Pending count 0 does not override the explicit ids (the events may not have reached the queue yet).
    expect(SyncInquiry.isFullySynced(result({ expectedEventIds: [a], processedEventIds: [], pendingCount: 0 }))).toBe(false)
  })

  it("absent processed ids -> not synced", () => {
    expect(SyncInquiry.isFullySynced(result({ expectedEventIds: [a], pendingCount: 0 }))).toBe(false)
  })

  it("empty or absent expected ids fall back to the pending count", () => {
    expect(SyncInquiry.isFullySynced(result({ expectedEventIds: [], pendingCount: 0 }))).toBe(true)
    expect(SyncInquiry.isFullySynced(result({ expectedEventIds: [], pendingCount: 1 }))).toBe(false)
    expect(SyncInquiry.isFullySynced(result({ pendingCount: 1, processedEventIds: [a] }))).toBe(false)
  })
})

describe("SyncInquiry ids", () => {
  it.effect("inquiry ids are unique and correlate request and result", () =>
    Effect.gen(function* () {
      const streamId = uuid()
      const first = yield* SyncInquiry.make({ perspectiveName: "P", streamId, eventIds: ["x"], includeProcessedEventIds: true })
      const second = yield* SyncInquiry.make({ perspectiveName: "P", streamId })
      expect(first.inquiryId).not.toBe(second.inquiryId)
      const answer = SyncInquiry.resultFor(first, { pendingCount: 0, processedCount: 1, processedEventIds: ["x"] })
      expect(answer.inquiryId).toBe(first.inquiryId)
      expect(answer.streamId).toBe(streamId)
      expect(answer.expectedEventIds).toEqual(["x"])
      expect(SyncInquiry.isFullySynced(answer)).toBe(true)
    })
  )
})
