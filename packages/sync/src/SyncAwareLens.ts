/**
 * Sync-aware lenses: read a perspective's row after waiting until the perspective caught up with the events
 * that matter, so a handler reads its own writes.
 *
 * - `getById(perspective, id, sync?)`: waits, then reads the row, its model decoded with the perspective's schema. Without `sync`, it waits for the stream's pending
 *   events (the row's id is its stream id) — from this process's tracker and, with `PgSyncInquiry`, the
 *   database; with a `SyncFilter`, for what the filter matches.
 * - `query(perspective, query)`: delegates to the store (no wait).
 * - `withSync(perspective, sync?)`: both, bound to one perspective.
 *
 * A wait that did not end fresh is never ignored: the result is `{ row, sync }`, and `sync` is the
 * `SyncResult` — `TimedOut` means the row may be stale, `DeadLettered` that it lacks the named event (the stream's
 * dead letters count, on every instance), `Failing` that it lacks the events a failing one holds until a retry
 * succeeds; test `SyncResult.isFresh(sync)`. (The original returned the row alone.) An id that is not a UUID, a
 * perspective the service does not run, or `SyncFilter.currentScope()` outside `ScopedEventTracker.withScope`,
 * fails at the call with `SyncArgumentError`.
 *
 * @since 0.1.0
 */
import { type Perspective, PerspectiveStore } from "@whizbang/core"
import { Duration, Effect, type Option } from "effect"
import { PerspectiveSyncAwaiter } from "./PerspectiveSyncAwaiter.js"
import type { InlineStageSyncError, SyncArgumentError, SyncFilterError } from "./SyncError.js"
import type * as SyncFilter from "./SyncFilter.js"
import type * as SyncResult from "./SyncResult.js"

/**
 * A row read after a sync wait (its `data` the perspective's decoded model), with the wait's outcome.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyncedRow<M = unknown> {
  readonly row: Option.Option<PerspectiveStore.Row<M>>
  readonly sync: SyncResult.SyncResult
}

/**
 * What to wait for: a filter, or the row's stream with a timeout (default 5 s).
 *
 * @category models
 * @since 0.1.0
 */
export type SyncSpec = SyncFilter.SyncOptions | SyncFilter.SyncFilterBuilder | { readonly timeout?: Duration.Input | undefined }

/**
 * Errors of a sync-aware read.
 *
 * @category models
 * @since 0.1.0
 */
export type LensError = PerspectiveStore.PerspectiveStoreError | SyncFilterError | SyncArgumentError | InlineStageSyncError

const isFilter = (spec: SyncSpec): spec is SyncFilter.SyncOptions | SyncFilter.SyncFilterBuilder => "filter" in spec

/**
 * Waits, then reads the row of stream `id`.
 *
 * @category reading
 * @since 0.1.0
 */
export const getById = <M, E>(
  perspective: Perspective.Perspective<M, E>,
  id: string,
  sync: SyncSpec = {}
): Effect.Effect<SyncedRow<M>, LensError, PerspectiveStore.PerspectiveStore | PerspectiveSyncAwaiter> =>
  Effect.gen(function* () {
    const awaiter = yield* PerspectiveSyncAwaiter
    const result = isFilter(sync)
      ? yield* awaiter.wait(perspective.name, sync)
      : yield* awaiter.waitForStream(perspective.name, id, { timeout: sync.timeout ?? Duration.seconds(5) })
    return { row: yield* PerspectiveStore.getRow(perspective, id), sync: result }
  })

/**
 * Reads rows without waiting.
 *
 * @category reading
 * @since 0.1.0
 */
export const query = <M, E>(
  perspective: Perspective.Perspective<M, E>,
  q?: PerspectiveStore.Query
): Effect.Effect<ReadonlyArray<PerspectiveStore.Row<M>>, PerspectiveStore.PerspectiveStoreError, PerspectiveStore.PerspectiveStore> =>
  PerspectiveStore.query(perspective, q)

/**
 * A lens bound to one perspective.
 *
 * @category models
 * @since 0.1.0
 */
export interface Lens<M = unknown> {
  readonly getById: (id: string, sync?: SyncSpec) => Effect.Effect<SyncedRow<M>, LensError>
  readonly query: (
    q?: PerspectiveStore.Query
  ) => Effect.Effect<ReadonlyArray<PerspectiveStore.Row<M>>, PerspectiveStore.PerspectiveStoreError>
}

/**
 * A lens over `perspective`; `sync` is the default wait of its `getById`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const withSync = <M, E>(
  perspective: Perspective.Perspective<M, E>,
  sync?: SyncSpec
): Effect.Effect<Lens<M>, never, PerspectiveStore.PerspectiveStore | PerspectiveSyncAwaiter> =>
  Effect.map(Effect.context<PerspectiveStore.PerspectiveStore | PerspectiveSyncAwaiter>(), (context) => ({
    getById: (id, override) => Effect.provideContext(getById(perspective, id, override ?? sync), context),
    query: (q) => Effect.provideContext(query(perspective, q), context)
  }))
