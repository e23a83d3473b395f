/**
 * @whizbang/core — domain types, perspectives, ports and in-memory layers. No database code.
 *
 * What only Whizbang's own packages share (`DurationOption`, `OutageLog`, `PerspectiveFingerprint`) is the
 * `@whizbang/core/internal` entry: not for applications, no semver guarantees.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as AppendRequest from "./AppendRequest.js"
/** @since 0.1.0 */
export * as Envelope from "./Envelope.js"
/** @since 0.1.0 */
export * as EventDefinition from "./EventDefinition.js"
/** @since 0.1.0 */
export * as EventId from "./EventId.js"
/** @since 0.1.0 */
export * as EventRegistry from "./EventRegistry.js"
/** @since 0.1.0 */
export * as EventStore from "./EventStore.js"
/** @since 0.1.0 */
export * as EventStoreError from "./EventStoreError.js"
/** @since 0.5.0 */
export * as StorageReason from "./StorageReason.js"
/** @since 0.1.0 */
export * as CompletionStrategy from "./CompletionStrategy.js"
/** @since 0.1.0 */
export * as DefinitionErrors from "./DefinitionErrors.js"
/** @since 0.1.0 */
export * as InstanceProvider from "./InstanceProvider.js"
/** @since 0.1.0 */
export * as NotificationListener from "./NotificationListener.js"
/** @since 0.1.0 */
export * as Perspective from "./Perspective.js"
/** @since 0.1.0 */
export * as PerspectiveRegistry from "./PerspectiveRegistry.js"
/** @since 0.1.0 */
export * as PerspectiveRunner from "./PerspectiveRunner.js"
/** @since 0.1.0 */
export * as PerspectiveStatus from "./PerspectiveStatus.js"
/** @since 0.1.0 */
export * as PerspectiveStore from "./PerspectiveStore.js"
/** @since 0.1.0 */
export * as ProcessedEventCache from "./ProcessedEventCache.js"
/** @since 0.1.0 */
export * as WorkCoordinator from "./WorkCoordinator.js"
/** @since 0.1.0 */
export * as WorkerOptions from "./WorkerOptions.js"
/** @since 0.1.0 */
export * as PerspectiveWorker from "./PerspectiveWorker.js"
/** @since 0.1.0 */
export * as LifecycleStage from "./LifecycleStage.js"
/** @since 0.1.0 */
export * as LifecycleStore from "./LifecycleStore.js"
/** @since 0.1.0 */
export * as Receptor from "./Receptor.js"
/** @since 0.1.0 */
export * as SecurityContext from "./SecurityContext.js"
/** @since 0.1.0 */
export * as PerspectiveRewinder from "./PerspectiveRewinder.js"
/** @since 0.1.0 */
export * as MemoryPipeline from "./MemoryPipeline.js"
