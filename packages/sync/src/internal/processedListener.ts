/**
 * The `wh_processed` channel (notified by the completion and dead-letter transactions of `PgWorkCoordinator`),
 * listened to for as long as a `PgSyncInquiry` layer lives, turned into a change counter that awaiters wait on.
 *
 * A completion's payload names the events it processed per perspective ({@link Processed}), so parked waits
 * settle from the notification itself; a payload without detail only says "something changed".
 *
 * The counter makes wake-ups lossless: an awaiter reads it before checking the database and waits for a value
 * above what it read, so a notification that arrives between its check and its wait still wakes it. Every
 * (re)connect also counts as a change, since notifications sent while disconnected are lost.
 *
 * @internal
 */
import { PgClient } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Deferred, Effect, Exit, type Scope, Stream } from "effect"

/** @internal */
export const channel = PgOperations.SyncInquiry.processedChannel

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
 * What one notification says was processed: perspective name -> event ids, from the completion's payload
 * (`<perspective>\t<id>,<id>` lines after the schema). `undefined`: no detail (a dead letter, a reconnect) —
 * anything may have changed.
 *
 * @internal
 */
export type Processed = ReadonlyMap<string, ReadonlySet<string>> | undefined

/** @internal */
export const parseDetail = (detail: string | undefined): Processed => {
  if (detail === undefined || detail.length === 0) return undefined
  const out = new Map<string, Set<string>>()
  for (const line of detail.split("\n")) {
    const tab = line.indexOf("\t")
    // A line this version cannot read: treat the whole notice as "anything may have changed".
    if (tab <= 0) return undefined
    const name = line.slice(0, tab)
    const ids = out.get(name) ?? new Set<string>()
    for (const id of line.slice(tab + 1).split(",")) if (id.length > 0) ids.add(id)
    out.set(name, ids)
  }
  return out
}

/**
 * Starts the listener fiber in the current scope (`PgClient.listen`: one connection, reconnected with capped
 * backoff): every notification (and reconnect) bumps `signal`, then runs `onChange` with what it says was processed.
 *
 * @internal
 */
export const start = <R>(
  signal: ChangeSignal,
  onChange: (processed: Processed) => Effect.Effect<void, never, R>
): Effect.Effect<void, never, PgClient.PgClient | Scope.Scope | R> =>
  Effect.asVoid(
    Effect.forkScoped(
      Stream.runForEach(PgClient.listen(channel), (detail) =>
        Effect.suspend(() => {
          signal.bump()
          return onChange(parseDetail(detail))
        })
      )
    )
  )
