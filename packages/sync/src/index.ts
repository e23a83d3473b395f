/**
 * @whizbang/sync — read-your-writes: wait until perspectives have processed the events you emitted.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as DebuggerAwareTimeout from "./DebuggerAwareTimeout.js"
/** @since 0.1.0 */
export * as Dispatcher from "./Dispatcher.js"
/** @since 0.1.0 */
export * as EmittedEvents from "./EmittedEvents.js"
/** @since 0.1.0 */
export * as EventCompletionAwaiter from "./EventCompletionAwaiter.js"
/** @since 0.2.0 */
export * as FireAt from "./FireAt.js"
/** @since 0.1.0 */
export * as InlineLifecycleStage from "./InlineLifecycleStage.js"
/** @since 0.1.0 */
export * as PerspectiveSyncAwaiter from "./PerspectiveSyncAwaiter.js"
/** @since 0.1.0 */
export * as PgSyncInquiry from "./PgSyncInquiry.js"
/** @since 0.1.0 */
export * as ReceptorSync from "./ReceptorSync.js"
/** @since 0.1.0 */
export * as ScopedEventTracker from "./ScopedEventTracker.js"
/** @since 0.1.0 */
export * as SyncAwareLens from "./SyncAwareLens.js"
/** @since 0.1.0 */
export * as SyncContext from "./SyncContext.js"
/** @since 0.1.0 */
export * as SyncError from "./SyncError.js"
/** @since 0.1.0 */
export * as SyncEventTracker from "./SyncEventTracker.js"
/** @since 0.1.0 */
export * as SyncFilter from "./SyncFilter.js"
/** @since 0.1.0 */
export * as SyncInquiry from "./SyncInquiry.js"
/** @since 0.1.0 */
export * as SyncInquiryPort from "./SyncInquiryPort.js"
/** @since 0.1.0 */
export * as SyncResult from "./SyncResult.js"
/** @since 0.1.0 */
export * as TrackedEventStore from "./TrackedEventStore.js"
/** @since 0.1.0 */
export * as TrackedEventTypeRegistry from "./TrackedEventTypeRegistry.js"
/** @since 0.1.0 */
export * as WorkerSignals from "./WorkerSignals.js"
