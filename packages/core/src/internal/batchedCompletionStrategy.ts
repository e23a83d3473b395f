/**
 * The default completion strategy: reports are held in memory and delivered once per cycle.
 *
 * Reporting touches nothing but memory. A delivery (`flush`, or the manual `pending*` / `markAsSent` /
 * `markAsAcknowledged` / `clearAcknowledged` steps) moves items pending -> sent -> acknowledged -> cleared.
 * Items are acknowledged by identity, so overlapping deliveries never acknowledge each other's items.
 * A sent item whose acknowledgement does not arrive returns to pending after
 * `retryTimeout * backoffMultiplier ^ retryCount` (capped at `maxBackoff`), so a crash or a
 * failed call mid-flush loses nothing; the coordinator's completion is idempotent and the dedup cache stops a
 * second apply.
 *
 * **When to use**: production (few round trips). The worker makes one per cycle and flushes it at the cycle's end, so a
 * cycle's results become visible together when its one completion transaction commits, not a cycle later.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Layer } from "effect"
import * as CompletionStrategy from "../CompletionStrategy.js"
import * as WorkerOptions from "../WorkerOptions.js"

type Entry<A> = { -readonly [K in keyof CompletionStrategy.Tracked<A>]: CompletionStrategy.Tracked<A>[K] }

const snapshot = <A>(entry: Entry<A>): CompletionStrategy.Tracked<A> => ({ ...entry })

/**
 * Exponential backoff (in ms) before a sent item with `retryCount` earlier retries counts as stale.
 *
 * @category combinators
 * @since 0.1.0
 */
export const staleAfterMillis = (options: WorkerOptions.RetryOptions, retryCount: number): number => {
  const factor = options.enableExponentialBackoff ? options.backoffMultiplier ** retryCount : 1
  return Math.min(Duration.toMillis(options.retryTimeout) * factor, Duration.toMillis(options.maxBackoff))
}

/**
 * Creates a batched strategy.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  retryOptions: WorkerOptions.RetryOptions = WorkerOptions.defaultRetryOptions
): Effect.Effect<CompletionStrategy.Shape> =>
  Effect.sync(() => {
    let nextId = 0
    const completions = new Map<number, Entry<CompletionStrategy.PerspectiveCompletion>>()
    const failures = new Map<number, Entry<CompletionStrategy.PerspectiveFailure>>()

    const add = <A>(into: Map<number, Entry<A>>, item: A) =>
      Effect.sync(() => {
        const id = nextId++
        into.set(id, { id, item, status: "pending", retryCount: 0 })
      })
    const pending = <A>(from: Map<number, Entry<A>>) =>
      Effect.sync(() =>
        Array.from(from.values())
          .filter((e) => e.status === "pending")
          .map(snapshot)
      )
    const mark = <A>(
      into: Map<number, Entry<A>>,
      items: ReadonlyArray<CompletionStrategy.Tracked<A>>,
      from: ReadonlyArray<CompletionStrategy.TrackedStatus>,
      to: CompletionStrategy.TrackedStatus,
      now: number
    ) => {
      for (const { id } of items) {
        const entry = into.get(id)
        if (entry === undefined || !from.includes(entry.status)) continue
        entry.status = to
        if (to === "sent") entry.sentAt = now
      }
    }
    const markAsSent: CompletionStrategy.Shape["markAsSent"] = (cs, fs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        mark(completions, cs, ["pending"], "sent", now)
        mark(failures, fs, ["pending"], "sent", now)
      })
    const acknowledge = <A>(into: Map<number, Entry<A>>, items: ReadonlyArray<CompletionStrategy.Tracked<A>>) =>
      mark(into, items, ["sent", "pending"], "acknowledged", 0)
    const clear = <A>(from: Map<number, Entry<A>>) => {
      let cleared = 0
      for (const [id, entry] of from) {
        if (entry.status === "acknowledged") {
          from.delete(id)
          cleared++
        }
      }
      return cleared
    }
    const reset = <A>(from: Map<number, Entry<A>>, now: number) => {
      let count = 0
      for (const entry of from.values()) {
        if (entry.status !== "sent" || entry.sentAt === undefined) continue
        if (now - entry.sentAt < staleAfterMillis(retryOptions, entry.retryCount)) continue
        entry.status = "pending"
        entry.retryCount++
        count++
      }
      return count
    }

    const flush: CompletionStrategy.Shape["flush"] = (reporter) =>
      Effect.gen(function* () {
        // Taking and marking happen in one synchronous step, so overlapping flushes never send an item twice.
        const [cs, fs] = yield* Effect.map(Clock.currentTimeMillis, (now) => {
          const take = <A>(from: Map<number, Entry<A>>) => {
            const taken = Array.from(from.values()).filter((e) => e.status === "pending")
            for (const entry of taken) {
              entry.status = "sent"
              entry.sentAt = now
            }
            return taken.map(snapshot)
          }
          return [take(completions), take(failures)] as const
        })
        if (cs.length > 0) {
          yield* reporter.reportCompletions(cs.map((t) => t.item))
          acknowledge(completions, cs)
        }
        if (fs.length > 0) {
          yield* reporter.reportFailures(fs.map((t) => t.item))
          acknowledge(failures, fs)
        }
        clear(completions)
        clear(failures)
        return { completions: cs.length, failures: fs.length }
      })

    return CompletionStrategy.CompletionStrategy.of({
      reportCompletion: (completion) => add(completions, completion),
      reportFailure: (failure) => add(failures, failure),
      pendingCompletions: pending(completions),
      pendingFailures: pending(failures),
      markAsSent,
      markAsAcknowledged: (cs, fs) =>
        Effect.sync(() => {
          acknowledge(completions, cs)
          acknowledge(failures, fs)
        }),
      clearAcknowledged: Effect.sync(() => clear(completions) + clear(failures)),
      resetStale: Effect.map(Clock.currentTimeMillis, (now) => reset(completions, now) + reset(failures, now)),
      flush
    })
  })

/**
 * Provides the batched strategy as the {@link CompletionStrategy.CompletionStrategy}.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (retryOptions?: WorkerOptions.RetryOptions): Layer.Layer<CompletionStrategy.CompletionStrategy> =>
  Layer.effect(CompletionStrategy.CompletionStrategy, make(retryOptions))
