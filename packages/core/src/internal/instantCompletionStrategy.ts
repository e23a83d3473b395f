/**
 * The instant completion strategy: every report calls the coordinator at once; nothing is ever pending.
 *
 * **When to use**: tests and latency-sensitive services, where a completion must be visible as soon as the
 * apply finished. It costs one coordinator call per report.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import * as CompletionStrategy from "../CompletionStrategy.js"

const none = Effect.succeed([] as const)
const zero = Effect.succeed(0)

/**
 * The instant strategy (stateless).
 *
 * @category constructors
 * @since 0.1.0
 */
export const instant: CompletionStrategy.Shape = CompletionStrategy.CompletionStrategy.of({
  reportCompletion: (completion, reporter) => reporter.reportCompletions([completion]),
  reportFailure: (failure, reporter) => reporter.reportFailures([failure]),
  pendingCompletions: none,
  pendingFailures: none,
  markAsSent: () => Effect.void,
  markAsAcknowledged: () => Effect.void,
  clearAcknowledged: zero,
  resetStale: zero,
  flush: () => Effect.succeed({ completions: 0, failures: 0 })
})

/**
 * Provides the instant strategy as the {@link CompletionStrategy.CompletionStrategy}.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<CompletionStrategy.CompletionStrategy> = Layer.succeed(CompletionStrategy.CompletionStrategy, instant)
