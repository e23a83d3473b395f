/**
 * What an in-process testing awaiter has observed so far, and a lossless wait for the first observation that
 * matches: the check and the wait use a change counter, so an item recorded between them still wakes the waiter.
 *
 * @internal
 */
import { Deferred, Duration, Effect, Exit, Option } from "effect"
import { AwaiterTimeoutError } from "../AwaiterTimeoutError.js"

/** @internal */
export class Observed<T> {
  readonly items: Array<T> = []
  private generation = 0
  private next = Deferred.makeUnsafe<void>()

  record(item: T): void {
    this.items.push(item)
    this.generation++
    const done = this.next
    this.next = Deferred.makeUnsafe<void>()
    Deferred.doneUnsafe(done, Exit.void)
  }

  /** The first item (recorded before or during the wait) that matches, or the timeout error naming `waitingFor`. */
  awaitFirst(
    matches: (item: T) => boolean,
    timeout: Duration.Input,
    awaiter: string,
    waitingFor: () => string
  ): Effect.Effect<T, AwaiterTimeoutError> {
    const loop: Effect.Effect<T> = Effect.suspend(() => {
      const found = this.items.find(matches)
      if (found !== undefined) return Effect.succeed(found)
      const generation = this.generation
      return Effect.flatMap(
        Effect.suspend(() => (this.generation > generation ? Effect.void : Deferred.await(this.next))),
        () => loop
      )
    })
    const limit = Duration.fromInputUnsafe(timeout)
    return Effect.flatMap(
      Effect.timeoutOption(loop, limit),
      Option.match({
        onNone: () => Effect.fail(new AwaiterTimeoutError({ awaiter, waitingFor: waitingFor(), timeout: limit })),
        onSome: Effect.succeed
      })
    )
  }
}
