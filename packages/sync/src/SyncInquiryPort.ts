/**
 * The port through which awaiters ask the database which events are still pending for a perspective — the
 * cross-instance path: an event this process does not track may be in flight on another instance.
 *
 * The default (no layer provided) knows nothing beyond this process and reports nothing pending, so the
 * in-process `SyncEventTracker` decides alone. The Postgres sync layer provides the real port.
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"

/**
 * The port's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyncInquiryPortShape {
  /** Of `eventIds`, those the perspective has not processed yet. */
  readonly pendingEventIds: (
    perspectiveName: string,
    eventIds: ReadonlyArray<string>
  ) => Effect.Effect<{ readonly pendingEventIds: ReadonlyArray<string> }>
}

/**
 * The port, with a no-op default: nothing pending beyond what the in-process tracker knows.
 *
 * @category references
 * @since 0.1.0
 */
export const SyncInquiryPort: Context.Reference<SyncInquiryPortShape> = Context.Reference("@whizbang/sync/SyncInquiryPort", {
  defaultValue: (): SyncInquiryPortShape => ({ pendingEventIds: () => Effect.succeed({ pendingEventIds: [] }) })
})
