/**
 * What this process knows about which versions serve each base name: whether the base key alone serves it
 * (`balance` live, no other version `live` or `ready`). Only then may a completion's payload for `balance` settle a
 * wait for `balance` without asking the database.
 *
 * The knowledge comes from the registry and stays current through the `wh_processed` channel itself: a trigger on
 * `wh_perspective_versions` notifies `@versions<TAB><base>:<1|0>` on every change of a version's state (migration
 * 0005). Postgres delivers a listener's notifications in commit order, so by the time a completion's payload is
 * handled, every version change committed before that completion has been applied here. A notification without
 * detail (a (re)connect, when notifications may have been lost, or a dead letter) makes the knowledge unknown until
 * the registry is read again; while unknown, nothing is alone (every payload re-checks in the database), and the
 * first payload that asks has the registry read.
 *
 * @internal
 */
import type { PgClient } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Deferred, Duration, Effect, Exit, type Scope } from "effect"
import type { Processed } from "./processedListener.js"

/** The line of a version change in a `wh_processed` payload. @internal */
export const noticeKey = "@versions"

/** @internal */
export class ServingVersions {
  private known = false
  private readonly aloneByBase = new Map<string, boolean>()
  /** A version change or a loss of detail arrived while the registry was being read: read it again. */
  private dirty = false
  private wake = Deferred.makeUnsafe<void>()
  /** Completed when `alone` was asked while the knowledge was unknown: only then is the registry read. */
  private asked = Deferred.makeUnsafe<void>()

  constructor(private readonly client: PgClient.PgClient["Service"]) {}

  /**
   * Whether the base key alone serves `baseName` now (a base without registry rows: yes). Asked while unknown: no,
   * and the registry is read for the next payloads.
   */
  alone(baseName: string): boolean {
    if (!this.known) {
      Deferred.doneUnsafe(this.asked, Exit.void)
      return false
    }
    return this.aloneByBase.get(baseName) ?? true
  }

  /** A `wh_processed` notification, before its completions are matched to waits. */
  notice(processed: Processed): void {
    if (processed === undefined) {
      this.known = false
      this.dirty = true
      Deferred.doneUnsafe(this.wake, Exit.void)
      return
    }
    const changes = processed.get(noticeKey)
    if (changes === undefined) return
    this.dirty = true
    for (const change of changes) {
      const colon = change.lastIndexOf(":")
      if (colon > 0) this.aloneByBase.set(change.slice(0, colon), change.slice(colon + 1) === "1")
    }
  }

  /**
   * The reader fiber, for as long as `scope` lives: reads the registry when the knowledge became unknown and a
   * payload asked for it — not before, so services whose payloads never name a wait (a tenant's services in a
   * worker process, started and stopped with each burst of work) never read it.
   */
  start(scope: Scope.Scope): Effect.Effect<void> {
    const read: Effect.Effect<boolean> = Effect.suspend(() => {
      this.dirty = false
      return PgOperations.SyncInquiry.servedAlone(this.client)
    }).pipe(
      Effect.map((rows) => {
        // A change arrived during the read: its notice may be newer than this snapshot (or older): read again.
        if (this.dirty) return false
        this.aloneByBase.clear()
        for (const row of rows) this.aloneByBase.set(row.baseName, row.alone)
        this.known = true
        return true
      }),
      Effect.catch((error) =>
        Effect.as(Effect.logWarning("reading the perspective versions failed; payloads re-check in the database", error), false)
      )
    )
    // Read again at once after a concurrent change, after a pause after a failure.
    const readUntilKnown: Effect.Effect<void> = Effect.flatMap(read, (ok) =>
      ok ? Effect.void : Effect.andThen(Effect.sleep(Duration.millis(this.dirty ? 0 : 500)), readUntilKnown)
    )
    const once = Effect.andThen(
      Effect.andThen(
        Effect.suspend(() => Deferred.await(this.wake)),
        Effect.suspend(() => Deferred.await(this.asked))
      ),
      Effect.suspend(() => {
        // Replaced before reading: a loss of detail, or a question while unknown, from now on asks for another read.
        this.wake = Deferred.makeUnsafe<void>()
        this.asked = Deferred.makeUnsafe<void>()
        return readUntilKnown
      })
    )
    return Effect.asVoid(Effect.forkIn(Effect.forever(once), scope))
  }
}
