/**
 * The WorkCoordinator port: claiming perspective work, fetching its events, and reporting the results.
 *
 * The Postgres implementation (in `@whizbang/postgres`) does each operation in one set-based round trip and
 * fences completions by lease ownership. {@link layerMemory} is a faithful-enough in-memory version for unit
 * tests: leases, stream affinity, attempts and cursors behave alike, but completions are not fenced.
 * Tests seed it and inspect it through the {@link Memory} service it also provides.
 *
 * @since 0.1.0
 */
import { Clock, Context, Data, Effect, Layer } from "effect"
import type * as CompletionStrategy from "./CompletionStrategy.js"
import * as MemoryCoordinator from "./internal/memoryCoordinator.js"
import type { PerspectiveStatus } from "./PerspectiveStatus.js"
import type * as StorageReason from "./StorageReason.js"

/**
 * A coordinator call failed (connection lost, lease fenced, ...).
 *
 * @category errors
 * @since 0.1.0
 */
export class WorkCoordinatorError extends Data.TaggedError("WorkCoordinatorError")<{
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
 * One pending (stream, perspective, event) work row with its event.
 *
 * @category models
 * @since 0.1.0
 */
export interface PendingEvent {
  readonly workId: string
  readonly streamId: string
  readonly perspectiveName: string
  readonly eventId: string
  readonly eventType: string
  readonly payload: unknown
  /** Failed apply attempts so far. */
  readonly attempts: number
  /** The event's position in its stream, when the coordinator has it. */
  readonly streamVersion?: number
  /** The event's metadata and scope, when the coordinator has them. */
  readonly metadata?: unknown
  readonly scope?: unknown
  /** True while the row waits out a retry backoff: the (stream, perspective) must stop before it. */
  readonly blocked?: boolean
  /**
   * True when the (stream, perspective) cursor is flagged RewindRequired (a late arrival): the row is only a
   * marker, the normal path must not apply it, and a `PerspectiveRewinder` (when provided) rebuilds the pair.
   */
  readonly rewindRequired?: boolean
  /**
   * The (stream, perspective) cursor's last applied event id as the fetch read it (`null`: no cursor yet);
   * absent when the coordinator does not track it. A completion hands it back
   * (`PerspectiveCompletion.cursorAtFetch`) so the coordinator can refuse to commit over a purge, rewind or
   * bootstrap that moved the cursor in between.
   */
  readonly cursorLastEventId?: string | null
  /**
   * The (stream, perspective) pair's stored read-model row as the fetch read it, when the request asked for it
   * (`withModels`) and the coordinator loads models with the fetch: `{ data }` (the encoded model), or `null` when
   * the pair has no row yet. Absent: not loaded here; the worker reads it from the `PerspectiveStore`. Every row of
   * a pair carries the same value.
   */
  readonly storedModel?: { readonly data: unknown } | null
  /**
   * `false` for work whose event `PostPerspective` receptors must not see: history replayed into a new version of
   * the perspective, and live events of a version that was not the live one when they were appended (the live
   * version fires for them). Absent: `true`.
   */
  readonly fires?: boolean
  /**
   * `true` when the pair has pending rows after the returned ones that the request's `backgroundLimit` held back
   * (as when it filled `limit`, the worker drains the pair again). Absent: `false`.
   */
  readonly more?: boolean
}

/**
 * The coordinator's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface Shape extends CompletionStrategy.CompletionReporter<WorkCoordinatorError> {
  /**
   * Leases the work of up to `maxStreams` streams for `leaseSeconds` (the worker's `lease` option, decoded to whole
   * seconds: port requests carry plain numbers); returns their ids (oldest work first).
   * Only streams with work the instance can apply now are claimed: a (stream, perspective) waiting out a retry
   * backoff or under a stream lock does not make its stream claimable.
   */
  readonly claimWork: (request: {
    readonly instanceId: string
    readonly maxStreams: number
    readonly leaseSeconds: number
    /**
     * The perspectives the instance runs: work of any other perspective is never claimed (it waits for an
     * instance that runs it — a rolling deploy). Absent: every perspective.
     */
    readonly perspectiveNames?: ReadonlyArray<string>
    /**
     * Streams the instance already has queued or in a cycle: not returned, so `maxStreams` counts only streams
     * that need a new cycle. (Their leases are renewed by the cycle and the completion.)
     */
    readonly exclude?: ReadonlyArray<string>
  }) => Effect.Effect<ReadonlyArray<string>, WorkCoordinatorError>
  /** Events of the instance's leased work on these streams, by stream, perspective and event id. */
  readonly fetchPendingEvents: (request: {
    readonly instanceId: string
    readonly streamIds: ReadonlyArray<string>
    /** Most events per (stream, perspective). Default: all. */
    readonly limit?: number
    /**
     * Most events of background work in the whole fetch: work whose `PostPerspective` receptors do not fire
     * (`PendingEvent.fires` false: a perspective version's history and the events routed to a version being
     * built), taken as whole (stream, perspective) batches until the budget is spent. Live work is never held back by
     * it, so a rebuild cannot make a cycle long enough to delay live events. A coordinator without background work
     * ignores it. Default: no limit.
     */
    readonly backgroundLimit?: number
    /** Only these perspectives' work is returned (as for `claimWork`). Absent: every perspective. */
    readonly perspectiveNames?: ReadonlyArray<string>
    /**
     * Also load each pair's stored read-model row in the same round trip (`PendingEvent.storedModel`), when the
     * coordinator can (the Postgres one can, given `perspectiveNames`: it writes those rows too). A coordinator
     * that cannot leaves `storedModel` absent.
     */
    readonly withModels?: boolean
  }) => Effect.Effect<ReadonlyArray<PendingEvent>, WorkCoordinatorError>
  /**
   * `claimWork` and the first `fetchPendingEvents` of every stream it claimed, in one call (one round trip in
   * Postgres): `pending` holds the claimed streams' events as that fetch would return them. Optional: the worker
   * claims and fetches separately when a coordinator has none (the in-memory one).
   */
  readonly claimAndFetch?: (
    request: Parameters<Shape["claimWork"]>[0] & Omit<Parameters<Shape["fetchPendingEvents"]>[0], "streamIds">
  ) => Effect.Effect<{ readonly streams: ReadonlyArray<string>; readonly pending: ReadonlyArray<PendingEvent> }, WorkCoordinatorError>
  /** Extends the instance's leases on these rows; returns how many were renewed. */
  readonly renewLeases: (request: {
    readonly instanceId: string
    readonly workIds: ReadonlyArray<string>
    readonly leaseSeconds: number
  }) => Effect.Effect<number, WorkCoordinatorError>
  /**
   * Extends the instance's live leases on these streams while their work is still being applied (the worker
   * calls it every `lease / 3` during a long cycle); returns the streams still held. A lease already
   * lost is not taken back.
   */
  readonly renewStreamLeases: (request: {
    readonly instanceId: string
    readonly streamIds: ReadonlyArray<string>
    readonly leaseSeconds: number
  }) => Effect.Effect<ReadonlyArray<string>, WorkCoordinatorError>
}

/**
 * The coordinator as a service.
 *
 * @category services
 * @since 0.1.0
 */
export class WorkCoordinator extends Context.Service<WorkCoordinator, Shape>()("@whizbang/core/WorkCoordinator") {}

/**
 * A work row as the in-memory coordinator keeps it.
 *
 * @category models
 * @since 0.1.0
 */
export interface MemoryWorkRow extends PendingEvent {
  readonly instanceId?: string
  readonly leaseExpiry?: number
  readonly error?: string
}

/**
 * A (stream, perspective) cursor as the in-memory coordinator keeps it.
 *
 * @category models
 * @since 0.1.0
 */
export interface MemoryCursor {
  readonly streamId: string
  readonly perspectiveName: string
  readonly lastEventId?: string
  readonly status: PerspectiveStatus
  readonly error?: string
}

/**
 * Seeding and inspection of the in-memory coordinator.
 *
 * @category services
 * @since 0.1.0
 */
export class Memory extends Context.Service<
  Memory,
  {
    readonly enqueue: (work: ReadonlyArray<Omit<PendingEvent, "attempts">>) => Effect.Effect<void>
    readonly workRows: Effect.Effect<ReadonlyArray<MemoryWorkRow>>
    readonly cursors: Effect.Effect<ReadonlyArray<MemoryCursor>>
  }
>()("@whizbang/core/WorkCoordinator/Memory") {}

/**
 * Creates an in-memory coordinator and its {@link Memory} controls.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeMemory = Effect.sync(() => {
  const state = MemoryCoordinator.empty()
  const coordinator = WorkCoordinator.of({
    claimWork: (request) => Effect.map(Clock.currentTimeMillis, (now) => MemoryCoordinator.claimWork(state, request, now)),
    fetchPendingEvents: (request) =>
      Effect.map(Clock.currentTimeMillis, (now) => MemoryCoordinator.fetchPendingEvents(state, request, now)),
    reportCompletions: (completions) => Effect.sync(() => MemoryCoordinator.reportCompletions(state, completions)),
    reportFailures: (failures) => Effect.sync(() => MemoryCoordinator.reportFailures(state, failures)),
    renewLeases: (request) => Effect.map(Clock.currentTimeMillis, (now) => MemoryCoordinator.renewLeases(state, request, now)),
    renewStreamLeases: (request) => Effect.map(Clock.currentTimeMillis, (now) => MemoryCoordinator.renewStreamLeases(state, request, now))
  })
  const memory = Memory.of({
    enqueue: (work) => Effect.sync(() => MemoryCoordinator.enqueue(state, work)),
    workRows: Effect.sync(() => MemoryCoordinator.workRows(state)),
    cursors: Effect.sync(() => [...state.cursors.values()])
  })
  return { coordinator, memory } as const
})

/**
 * Provides an in-memory {@link WorkCoordinator} and its {@link Memory} controls.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<WorkCoordinator | Memory> = Layer.effectContext(
  Effect.map(makeMemory, ({ coordinator, memory }) => Context.make(WorkCoordinator, coordinator).pipe(Context.add(Memory, memory)))
)
