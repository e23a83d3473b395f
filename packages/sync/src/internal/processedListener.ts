/**
 * One LISTEN connection per `PgSyncInquiry` layer for the `wh_processed` channel (notified by the completion
 * and dead-letter transactions of `PgWorkCoordinator`), turned into a change counter that awaiters wait on.
 *
 * The counter makes wake-ups lossless: an awaiter reads it before checking the database and waits for a value
 * above what it read, so a notification that arrives between its check and its wait still wakes it. Every
 * (re)connect also counts as a change, since notifications sent while disconnected are lost.
 *
 * @internal
 */
import { type PgClient, PgListener } from "@whizbang/postgres"
import { Deferred, Effect, Exit, type Scope } from "effect"

/** @internal */
export const channel = "wh_processed"

/** @internal */
export class ChangeSignal {
  generation = 0
  private next = Deferred.makeUnsafe<void>()

  bump(): void {
    this.generation++
    const done = this.next
    this.next = Deferred.makeUnsafe<void>()
    Deferred.doneUnsafe(done, Exit.void)
  }

  readonly current: Effect.Effect<number> = Effect.sync(() => this.generation)

  awaitChangeAfter(generation: number): Effect.Effect<void> {
    return Effect.suspend(() => (this.generation > generation ? Effect.void : Deferred.await(this.next)))
  }
}

/**
 * Starts the listener fiber in the current scope (`PgListener`: reconnects with capped backoff) and returns its signal.
 *
 * @internal
 */
export const start: Effect.Effect<ChangeSignal, never, PgClient.PgClient | Scope.Scope> = Effect.gen(function* () {
  const signal = new ChangeSignal()
  yield* PgListener.fork(channel, () => signal.bump())
  return signal
})
