/**
 * Drains a channel in batches into one call each: the completion and failure flush path.
 *
 * A flusher waits for at least one item, takes everything available up to `maxBatchSize`, and hands the batch
 * to `flush` (e.g. `WorkCoordinator.reportCompletions`) in one call. A failing flush is retried with capped
 * exponential backoff and the batch is kept until it succeeds: nothing is dropped. While it retries, the
 * bounded channel fills and producers wait, which is the back-pressure we want.
 *
 * **When to use**: fork `run` once per channel in a scoped layer; use `flushOnce` to drive it step by step.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Queue, Schedule } from "effect"

/**
 * Flusher options.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options<A, E, R> {
  /** Delivers one batch. */
  readonly flush: (batch: ReadonlyArray<A>) => Effect.Effect<void, E, R>
  /** Most items per call. Default 1000. */
  readonly maxBatchSize?: number
  /** Backoff between failed attempts. Default: exponential from 100 ms, capped at 30 s, unlimited attempts. */
  readonly retry?: Schedule.Schedule<unknown, E>
}

/**
 * The default retry: 100 ms doubling, capped at 30 s, forever.
 *
 * @category constructors
 * @since 0.1.0
 */
export const defaultRetry: Schedule.Schedule<Duration.Duration> = Schedule.min([
  Schedule.exponential(Duration.millis(100)),
  Schedule.spaced(Duration.seconds(30))
])

/**
 * Waits for items, then flushes one batch; returns its size. Fails only if a custom, finite retry schedule
 * gives up, and then that batch is not re-queued: keep the default (unlimited) schedule for completions.
 *
 * @category combinators
 * @since 0.1.0
 */
export const flushOnce = <A, E, R>(queue: Queue.Dequeue<A>, options: Options<A, E, R>): Effect.Effect<number, E, R> =>
  Effect.gen(function*() {
    const batch = yield* Queue.takeBetween(queue, 1, options.maxBatchSize ?? 1000)
    yield* options.flush(batch).pipe(
      Effect.tapError((error) => Effect.logWarning("batch flush failed; retrying", error)),
      Effect.retry(options.retry ?? defaultRetry)
    )
    return batch.length
  })

/**
 * Flushes forever.
 *
 * @category combinators
 * @since 0.1.0
 */
export const run = <A, E, R>(queue: Queue.Dequeue<A>, options: Options<A, E, R>): Effect.Effect<never, E, R> =>
  Effect.forever(flushOnce(queue, options))
