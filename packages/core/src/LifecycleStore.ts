/**
 * The LifecycleStore port: durable bookkeeping of events whose `PostAllPerspectives` / `PostLifecycle` stages
 * have not fired yet, so those stages fire once per event after ALL its perspectives committed it — also when
 * the perspectives completed in different cycles, and again after a crash (orphaned lifecycles are claimed at
 * start-up).
 *
 * The Postgres layer (`PgLifecycleStore`) keeps `wh_lifecycle_pending`, written in the append transaction.
 * {@link layerNone} keeps nothing: with it those two stages never fire (for tests and services without such
 * receptors).
 *
 * @since 0.1.0
 */
import { Context, Data, Effect, Layer } from "effect"
import type * as StorageReason from "./StorageReason.js"

/**
 * A stored event whose perspectives all completed, as the store returns it (payload still encoded).
 *
 * @category models
 * @since 0.1.0
 */
export interface CompletedEvent {
  readonly eventId: string
  readonly streamId: string
  readonly streamVersion: number
  readonly eventType: string
  readonly payload: unknown
  readonly metadata: unknown
  readonly scope: unknown
  /** Perspectives that moved the event to dead letters instead of applying it (absent or empty: all applied it). */
  readonly deadLetteredBy?: ReadonlyArray<string> | undefined
}

/**
 * @category errors
 * @since 0.1.0
 */
export class LifecycleStoreError extends Data.TaggedError("LifecycleStoreError")<{
  readonly operation: string
  /** Why, as the storage classifies it: match on `reason._tag` (`ConnectionError`, `Refused`, ...). */
  readonly reason: StorageReason.PortReason
  /** What failed, in words (the storage's message). */
  readonly detail: string
  readonly cause?: unknown
}> {
  override get message(): string {
    return `${this.operation} failed: ${this.detail}`
  }
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  /**
   * Claims, for this instance, the pending lifecycles of these events (all pending ones when `eventIds` is
   * absent) whose work rows are all gone. A claim older than `reclaimAfterSeconds` is taken over.
   */
  readonly claimCompleted: (request: {
    readonly instanceId: string
    readonly eventIds?: ReadonlyArray<string>
    readonly reclaimAfterSeconds: number
  }) => Effect.Effect<ReadonlyArray<CompletedEvent>, LifecycleStoreError>
  /** Forgets lifecycles that fired. */
  readonly complete: (eventIds: ReadonlyArray<string>) => Effect.Effect<void, LifecycleStoreError>
}

/**
 * @category services
 * @since 0.1.0
 */
export class LifecycleStore extends Context.Service<LifecycleStore, Shape>()("@whizbang/core/LifecycleStore") {}

/**
 * A store that keeps nothing.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerNone: Layer.Layer<LifecycleStore> = Layer.succeed(
  LifecycleStore,
  LifecycleStore.of({ claimCompleted: () => Effect.succeed([]), complete: () => Effect.void })
)
