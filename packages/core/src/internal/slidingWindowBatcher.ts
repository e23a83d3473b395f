/**
 * Sliding-window batching: collect a burst of signals into one batch.
 *
 * After the first item arrives, wait `slidingWindow` (default 300 ms) for the next one; each arrival restarts
 * the window. The batch closes when the window passes quietly, when `maxWait` (default 3 s) has passed since
 * the first item, or when it holds `maxSize` (default 1000) distinct keys. Items with a key already in the batch
 * coalesce into the first occurrence (a burst of drain signals for one stream becomes one apply pass).
 *
 * Two options make the window apply only while work is already flowing (the worker uses both):
 * - `eagerWhenIdle`: when the queue was empty as the take began (nothing waiting: the consumer was idle), the first
 *   arrival closes the batch at once, together with whatever is already queued behind it.
 * - `keepOpen`: checked before each wait for a further item and every 5 ms while waiting; `false` closes the batch at
 *   once. The worker keeps a batch open only while every other consumer is busy, so waiting never holds work that
 *   a free consumer could start on now (within 5 ms of it becoming free, not at the end of the window).
 * When items were already waiting and `keepOpen` holds, the window, `maxWait` and `maxSize` batch them as above:
 * an idle worker applies a lone event without delay, and a saturated one still builds large batches.
 *
 * Order is preserved: a batch lists keys in first-arrival order, and no item is dropped. An item that would
 * exceed `maxSize` stays in the queue for the next batch. Time comes from Effect's `Clock` (TestClock-driven).
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Queue } from "effect"

/**
 * Batcher options.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options<A> {
  /** Quiet period that closes a batch; restarts on each arrival. Default 300 ms. */
  readonly slidingWindow?: Duration.Input
  /** Hard cap from the first item. Default 3 s. */
  readonly maxWait?: Duration.Input
  /** Maximum distinct keys per batch. Default 1000. */
  readonly maxSize?: number
  /** Coalescing key. Default: the item itself (strings, numbers). */
  readonly key?: (item: A) => unknown
  /** Close the batch at the first arrival when nothing was waiting as the take began. Default false. */
  readonly eagerWhenIdle?: boolean
  /**
   * Checked before each wait for a further item, and every 5 ms during a wait: `false` closes the batch now.
   * Default: always open.
   */
  readonly keepOpen?: () => boolean
}

/**
 * A closed batch.
 *
 * @category models
 * @since 0.1.0
 */
export interface Batch<A> {
  /** Distinct items, in first-arrival order. */
  readonly items: ReadonlyArray<A>
  /** How many items were taken from the queue, duplicates included. */
  readonly received: number
}

/** How often an open batch re-checks `keepOpen` while it waits for a further item. */
const keepOpenRecheckMillis = 5

const millis = (input: Duration.Input | undefined, fallback: number) =>
  input === undefined ? fallback : Duration.toMillis(Duration.fromInputUnsafe(input))

/**
 * Waits for the first item, then collects a batch as described above. If the queue ends or fails while a
 * batch is open, the batch collected so far is returned (the next call then fails with the queue's error).
 *
 * @category combinators
 * @since 0.1.0
 */
export const take = <A, E>(queue: Queue.Dequeue<A, E>, options: Options<A> = {}): Effect.Effect<Batch<A>, E> => {
  const window = millis(options.slidingWindow, 300)
  const maxWait = millis(options.maxWait, 3000)
  const maxSize = Math.max(1, options.maxSize ?? 1000)
  const keyOf = options.key ?? ((a: A) => a)
  return Effect.gen(function* () {
    const batch = new Map<unknown, A>()
    const idle = options.eagerWhenIdle === true && (yield* Queue.size(queue)) <= 0
    const first = yield* Queue.take(queue)
    batch.set(keyOf(first), first)
    let received = 1
    if (idle) {
      while (batch.size < maxSize) {
        const next = yield* Queue.poll(queue)
        if (next._tag === "None") break
        received++
        const key = keyOf(next.value)
        if (!batch.has(key)) batch.set(key, next.value)
      }
      return { items: Array.from(batch.values()), received }
    }
    const start = yield* Clock.currentTimeMillis
    const deadline = start + maxWait
    let lastArrival = start
    while (batch.size < maxSize) {
      if (options.keepOpen !== undefined && !options.keepOpen()) break
      const now = yield* Clock.currentTimeMillis
      const remaining = Math.min(lastArrival + window, deadline) - now
      if (remaining <= 0) break
      // With `keepOpen`, a long wait is cut into slices so that a change of mind (a consumer became free) closes
      // the batch within `keepOpenRecheck`, not at the end of the window.
      const slice = options.keepOpen === undefined ? remaining : Math.min(remaining, keepOpenRecheckMillis)
      const next = yield* Effect.result(Queue.take(queue).pipe(Effect.timeoutOption(Duration.millis(slice))))
      if (next._tag === "Failure") break
      if (next.success._tag === "None") continue
      lastArrival = yield* Clock.currentTimeMillis
      const item = next.success.value
      received++
      const key = keyOf(item)
      if (!batch.has(key)) batch.set(key, item)
    }
    return { items: Array.from(batch.values()), received }
  })
}
