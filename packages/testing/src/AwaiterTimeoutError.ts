/**
 * The error of the testing awaiters (`MessageAwaiter`, `LifecycleStageAwaiter`, `MultiHostPerspectiveAwaiter`):
 * the timeout passed, and the message names what the awaiter was still waiting for.
 *
 * @since 0.2.0
 */
import { Data, Duration } from "effect"

/**
 * A testing awaiter timed out.
 *
 * @category errors
 * @since 0.2.0
 */
export class AwaiterTimeoutError extends Data.TaggedError("AwaiterTimeoutError")<{
  readonly awaiter: string
  /** What was still missing, in words (event types, stages, perspectives and event ids). */
  readonly waitingFor: string
  readonly timeout: Duration.Duration
}> {
  override get message(): string {
    return `${this.awaiter} timed out after ${Duration.toMillis(this.timeout)} ms, still waiting for ${this.waitingFor}`
  }
}
