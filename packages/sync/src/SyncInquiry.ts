/**
 * The sync inquiry: the question an awaiter asks the database ("has perspective P processed these events?")
 * and the rules for reading the answer.
 *
 * The answer is judged by explicit event ids whenever the awaiter has them: a stream-wide "nothing pending"
 * is a false positive while the events are still on their way to the work queue. Only without expected ids
 * does the pending count decide.
 *
 * @since 0.1.0
 */
import { EventId } from "@whizbang/core"
import { Effect } from "effect"

/**
 * The question.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyncInquiry {
  /** Correlates the question with its {@link SyncInquiryResult}. */
  readonly inquiryId: string
  readonly perspectiveName: string
  readonly streamId?: string | undefined
  /** Check only these events. */
  readonly eventIds?: ReadonlyArray<string> | undefined
  readonly eventTypeFilter?: ReadonlyArray<string> | undefined
  readonly includePendingEventIds?: boolean | undefined
  readonly includeProcessedEventIds?: boolean | undefined
  /** Cross-scope: find the stream's pending events (of `eventTypeFilter`) in the database. */
  readonly discoverPendingFromOutbox?: boolean | undefined
}

/**
 * The answer.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyncInquiryResult {
  readonly inquiryId: string
  readonly streamId?: string | undefined
  readonly pendingCount: number
  readonly processedCount: number
  readonly pendingEventIds?: ReadonlyArray<string> | undefined
  readonly processedEventIds?: ReadonlyArray<string> | undefined
  /** Asked ids that were dead-lettered: no longer pending, never applied. Not counted as processed. */
  readonly deadLetteredEventIds?: ReadonlyArray<string> | undefined
  /** The ids the awaiter waits for (copied from the inquiry's `eventIds`). */
  readonly expectedEventIds?: ReadonlyArray<string> | undefined
}

/**
 * Makes an inquiry with a fresh id.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (fields: Omit<SyncInquiry, "inquiryId">): Effect.Effect<SyncInquiry> =>
  Effect.map(EventId.make, (inquiryId) => ({ ...fields, inquiryId }))

/**
 * A result for `inquiry`: same inquiry id and stream, its event ids as the expected ids.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resultFor = (
  inquiry: SyncInquiry,
  counts: Omit<SyncInquiryResult, "inquiryId" | "streamId" | "expectedEventIds">
): SyncInquiryResult => ({
  ...counts,
  inquiryId: inquiry.inquiryId,
  streamId: inquiry.streamId,
  expectedEventIds: inquiry.eventIds
})

/**
 * With expected ids: synced only when every one of them is among the processed ids (absent processed ids: not
 * synced). Without expected ids (absent or empty): synced when nothing is pending.
 *
 * @category predicates
 * @since 0.1.0
 */
export const isFullySynced = (result: SyncInquiryResult): boolean => {
  const expected = result.expectedEventIds ?? []
  if (expected.length === 0) return result.pendingCount === 0
  if (result.processedEventIds === undefined) return false
  const processed = new Set(result.processedEventIds)
  return expected.every((id) => processed.has(id))
}

/**
 * Whether a wait for this result is over: like {@link isFullySynced}, except that dead-lettered expected ids
 * count as settled (they will never be applied, so waiting longer cannot help).
 *
 * @category predicates
 * @since 0.1.0
 */
export const isSettled = (result: SyncInquiryResult): boolean => {
  const expected = result.expectedEventIds ?? []
  if (expected.length === 0) return result.pendingCount === 0
  const settled = new Set([...(result.processedEventIds ?? []), ...(result.deadLetteredEventIds ?? [])])
  return expected.every((id) => settled.has(id))
}
