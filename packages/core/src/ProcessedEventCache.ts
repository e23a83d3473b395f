/**
 * A two-phase cache of applied work, so work the database re-delivers before a completion is acknowledged is
 * not applied twice.
 *
 * - **InFlight**: added right after apply. Never expires: it guards until the database confirms the completion.
 * - **Retained**: {@link ProcessedEventCache.activateRetentionOf} (the worker calls it with a cycle's own work once
 *   the coordinator acknowledged its flush) or {@link ProcessedEventCache.activateRetention} (every in-flight entry)
 *   starts the TTL (default 300 s, the lease duration) for in-flight entries only; entries already retained keep
 *   their start. A retained entry stops matching once its TTL has passed, even before
 *   {@link ProcessedEventCache.evictExpired} removes it.
 *
 * Keys are work ids (one per stream, perspective and event). The worker keys by work row, never by event: rebuild,
 * rewind, purge and dead-letter retry each create NEW work rows for events already applied, so their work can
 * never be taken for a duplicate, while a row the database re-delivers (same work id) still is.
 *
 * Memory stays bounded: the worker calls {@link ProcessedEventCache.evictExpired} every cycle, and it costs
 * O(evicted + 1), amortised — retained entries are queued in the order their TTL started, so eviction stops at the
 * first live one. At rest the cache holds at most the work applied within one TTL, and at most `maxRetained` entries
 * when that is set (the worker sets it: at high throughput one TTL of work is millions of rows).
 *
 * Time comes from Effect's `Clock`, so `TestClock` drives expiry in tests.
 *
 * **Gotchas**: re-adding a retained key makes it in-flight again (it was applied again and needs a new
 * acknowledgement).
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect } from "effect"
import * as Entries from "./internal/processedEntries.js"

/**
 * Hooks for metrics, logging and test assertions. Every hook is optional.
 *
 * @category models
 * @since 0.1.0
 */
export interface Observer {
  readonly deduped?: (ids: ReadonlyArray<string>, perspectiveName: string, streamId: string) => Effect.Effect<void>
  readonly markedInFlight?: (ids: ReadonlyArray<string>) => Effect.Effect<void>
  readonly retentionActivated?: (count: number) => Effect.Effect<void>
  readonly evicted?: (count: number) => Effect.Effect<void>
  readonly removed?: (ids: ReadonlyArray<string>) => Effect.Effect<void>
}

/**
 * Cache options.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** How long retained entries keep matching. Default 300 s (the worker passes its `lease` option). */
  readonly retention?: Duration.Input
  /**
   * At most this many retained entries: {@link ProcessedEventCache.evictExpired} also evicts the oldest beyond it,
   * even within their TTL (in-flight entries are never evicted). Bounds memory at high throughput, where one TTL of
   * work is millions of rows. Default: no bound (the TTL alone). A positive integer.
   */
  readonly maxRetained?: number
  readonly observer?: Observer
}

/**
 * The cache's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface ProcessedEventCache {
  /** Marks ids as in flight (after apply). Duplicates are fine and count once. */
  readonly markInFlight: (ids: Iterable<string>) => Effect.Effect<void>
  /** `true` while the id is in flight, or retained and within its TTL. */
  readonly contains: (id: string) => Effect.Effect<boolean>
  /** Returns the ids not yet processed, in order; reports the others to `observer.deduped`. */
  readonly filterUnprocessed: (
    ids: ReadonlyArray<string>,
    perspectiveName: string,
    streamId: string
  ) => Effect.Effect<ReadonlyArray<string>>
  /** Starts the TTL of every in-flight entry; returns how many. */
  readonly activateRetention: Effect.Effect<number>
  /**
   * Starts the TTL of these entries only, those still in flight (the ones one delivery acknowledged: another
   * delivery's entries stay in flight until their own acknowledgement); returns how many. Ids not in flight are
   * ignored.
   *
   * @since 0.3.0
   */
  readonly activateRetentionOf: (ids: Iterable<string>) => Effect.Effect<number>
  /** Removes retained entries past their TTL (never in-flight ones); returns how many. Costs O(evicted + 1). */
  readonly evictExpired: Effect.Effect<number>
  readonly remove: (id: string) => Effect.Effect<boolean>
  /** Removes these ids whatever their phase (rewinds); returns how many were present. */
  readonly removeRange: (ids: Iterable<string>) => Effect.Effect<number>
  /** Entries that still match: in flight plus retained within their TTL. */
  readonly count: Effect.Effect<number>
}

/**
 * Creates an empty cache. A `maxRetained` that is not a positive integer is a defect (the caller's bug), named in
 * the message.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: Options = {}): Effect.Effect<ProcessedEventCache> =>
  options.maxRetained !== undefined && !(Number.isSafeInteger(options.maxRetained) && options.maxRetained > 0)
    ? Effect.die(new RangeError(`ProcessedEventCache maxRetained must be a positive integer, got ${options.maxRetained}`))
    : makeValid(options)

const makeValid = (options: Options): Effect.Effect<ProcessedEventCache> =>
  Effect.sync(() => {
    const ttl = Duration.toMillis(Duration.fromInputUnsafe(options.retention ?? Duration.seconds(300)))
    const observer = options.observer ?? {}
    const state = Entries.empty(ttl, options.maxRetained ?? Number.POSITIVE_INFINITY)
    const notify = <A>(hook: ((a: A) => Effect.Effect<void>) | undefined, a: A, when: boolean) =>
      hook !== undefined && when ? hook(a) : Effect.void

    const activateRetentionOf = (ids: Iterable<string>) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const count = Entries.activateRetentionOf(state, ids, now)
        return Effect.as(notify(observer.retentionActivated, count, count > 0), count)
      })

    const removeRange = (ids: Iterable<string>) =>
      Effect.suspend(() => {
        const gone = Entries.removeRange(state, ids)
        return Effect.as(notify(observer.removed, gone, gone.length > 0), gone.length)
      })

    return {
      markInFlight: (ids) =>
        Effect.suspend(() => {
          const added = Entries.markInFlight(state, ids)
          return notify(observer.markedInFlight, added, added.length > 0)
        }),
      contains: (id) => Effect.map(Clock.currentTimeMillis, (now) => Entries.has(state, id, now)),
      filterUnprocessed: (ids, perspectiveName, streamId) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const fresh: Array<string> = []
          const seen: Array<string> = []
          for (const id of ids) (Entries.has(state, id, now) ? seen : fresh).push(id)
          return seen.length > 0 && observer.deduped !== undefined
            ? Effect.as(observer.deduped(seen, perspectiveName, streamId), fresh)
            : Effect.succeed(fresh)
        }),
      activateRetention: Effect.suspend(() => activateRetentionOf(Entries.inFlightIds(state))),
      activateRetentionOf,
      evictExpired: Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const count = Entries.evictExpired(state, now)
        return Effect.as(notify(observer.evicted, count, count > 0), count)
      }),
      remove: (id) => Effect.map(removeRange([id]), (n) => n > 0),
      removeRange,
      count: Effect.map(Clock.currentTimeMillis, (now) => Entries.liveCount(state, now))
    } satisfies ProcessedEventCache
  })
