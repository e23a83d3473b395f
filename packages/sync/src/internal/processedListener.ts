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
import type { PgClient } from "@whizbang/postgres"
import { Deferred, Duration, Effect, Exit, Schedule, type Scope } from "effect"

// `pg` is not a dependency of this package: its types are reached through PgClient's pool.
type Pool = PgClient.Shape["pool"]
interface Notification {
  readonly channel: string
  readonly payload?: string | undefined
}

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
    return Effect.suspend(() => this.generation > generation ? Effect.void : Deferred.await(this.next))
  }
}

/** Holds one LISTEN connection until it breaks; fails when it does, so the caller reconnects. */
const listenOnce = (pool: Pool, schema: string, signal: ChangeSignal) =>
  Effect.scoped(
    Effect.gen(function*() {
      const connection = yield* Effect.acquireRelease(
        Effect.tryPromise(() => pool.connect()),
        (c) => Effect.sync(() => c.release(true))
      )
      yield* Effect.tryPromise(() => connection.query(`LISTEN ${channel}`))
      signal.bump()
      yield* Effect.callback<never, Error>((resume) => {
        const onNotification = (message: Notification) => {
          if (message.channel === channel && message.payload === schema) signal.bump()
        }
        const onBroken = (error?: Error) => resume(Effect.fail(error ?? new Error("LISTEN connection ended")))
        connection.on("notification", onNotification)
        connection.on("error", onBroken)
        connection.on("end", onBroken)
        return Effect.sync(() => {
          connection.off("notification", onNotification)
          connection.off("error", onBroken)
          connection.off("end", onBroken)
        })
      })
    })
  )

/**
 * Starts the listener fiber in the current scope (reconnecting with capped backoff) and returns its signal.
 *
 * @internal
 */
export const start = (pool: Pool, schema: string): Effect.Effect<ChangeSignal, never, Scope.Scope> =>
  Effect.gen(function*() {
    const signal = new ChangeSignal()
    const reconnect = Schedule.min([Schedule.exponential(Duration.millis(100)), Schedule.spaced(Duration.seconds(5))])
    yield* Effect.forkScoped(
      listenOnce(pool, schema, signal).pipe(
        Effect.tapError((error) => Effect.logWarning(`LISTEN ${channel} connection lost; reconnecting`, error)),
        Effect.retry(reconnect)
      )
    )
    return signal
  })
