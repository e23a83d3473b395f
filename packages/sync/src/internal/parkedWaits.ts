/**
 * The waits parked on the database, woken only by a notification that settles them.
 *
 * - **From the payload** (the fast path): a completion's `NOTIFY wh_processed` names the events it processed per
 *   perspective, and Postgres delivers it only after the transaction committed and became visible. A parked wait
 *   whose event is named is settled at once, without a query; the others are not woken at all.
 * - **By a sweep**: a notification without detail (a dead letter, a reconnect, a completion that removed no work row)
 *   wakes one sweeper fiber, which asks the database about every parked event in one query per perspective and
 *   completes only the waits that query settles (processed, dead-lettered, or held by a failing event: a failure
 *   notifies without detail too). Signals during a sweep are folded
 *   into the next one. So N parked waits and M notifications cost at most about M queries, never N × M wake-ups.
 *
 * - **Perspective versions**: a payload names keys (`balance__v2`), a wait is for every serving version of its base
 *   name. Entries and notices are matched by base name, and a payload settles a wait directly only when
 *   `fastPath(base, key)` says that key alone serves the base at this point of the notification stream (which
 *   carries the registry's changes in commit order). Otherwise the notification re-classifies exactly the waits it
 *   names (a targeted sweep).
 *
 * No lost wake-ups: a wait parks with the change counter it read before its last database check. Notifications
 * that arrived since (counter moved) are replayed from a ring of the recent ones; when one of them had no detail,
 * or the ring no longer reaches back that far, the park requests a sweep. A sweep takes its snapshot of the parked
 * waits when it starts, so every wait parked before a signal is in a sweep that starts after it.
 *
 * @internal
 */
import { Perspective } from "@whizbang/core"
import { Deferred, Effect, Exit, type Scope } from "effect"
import type { HeldEvent } from "../SyncInquiryPort.js"
import type { ChangeSignal, Processed } from "./processedListener.js"

/** What settled a parked wait. @internal */
export interface Settled {
  /** Of the wait's ids, those still pending. */
  readonly pendingEventIds: ReadonlyArray<string>
  /** Of the wait's ids, those dead-lettered. */
  readonly deadLetteredEventIds: ReadonlyArray<string>
  /** Of the wait's pending ids, those held by a failing event (absent: none). */
  readonly failing?: ReadonlyArray<HeldEvent> | undefined
  /** The change counter the answer is as fresh as: park again with it, so a later signal is not lost. */
  readonly generation: number
}

/** The verdicts the sweeper needs from the database, for one perspective. @internal */
export type Classify = (
  perspectiveName: string,
  eventIds: ReadonlyArray<string>
) => Effect.Effect<
  {
    readonly pending: ReadonlyArray<string>
    readonly deadLettered: ReadonlyArray<string>
    readonly failing?: ReadonlyArray<HeldEvent> | undefined
  },
  unknown
>

/** Whether a payload naming `key` settles waits for `baseName` without a query. @internal */
export type FastPath = (baseName: string, key: string) => boolean

interface Parked {
  readonly perspectiveName: string
  readonly baseName: string
  readonly eventIds: ReadonlyArray<string>
  readonly generation: number
  readonly done: Deferred.Deferred<Settled>
}

interface Notice {
  readonly generation: number
  readonly processed: Processed
}

/** How many recent notifications a late park can replay. */
const recentNotices = 256

/** What notices say about one parked wait. */
interface Match {
  /** Ids a payload settles directly. */
  readonly settled: Set<string>
  /** A named id needs a query (versions, or not yet answered). */
  sweep: boolean
}

/** @internal */
export class ParkedWaits {
  private readonly parked = new Set<Parked>()
  /** Event id -> the parked waits that include it, so a notification touches only the waits it names. */
  private readonly byEvent = new Map<string, Set<Parked>>()
  private readonly recent: Array<Notice> = []
  private wake = Deferred.makeUnsafe<void>()
  /** Sweeps run so far (diagnostics and tests). */
  sweeps = 0

  /** Waits a notification named that must be re-classified (targeted sweep). */
  private targeted = new Set<Parked>()
  /** A sweep of every parked wait was requested. */
  private full = false

  constructor(
    private readonly signal: ChangeSignal,
    private readonly classify: Classify,
    /** Default: the key is the base name (no versions known). */
    private readonly fastPath: FastPath = (baseName, key) => key === baseName
  ) {}

  /** How many waits are parked now. */
  get size(): number {
    return this.parked.size
  }

  /** Asks for a sweep of every parked wait. */
  request(): void {
    this.full = true
    Deferred.doneUnsafe(this.wake, Exit.void)
  }

  /** Asks for a sweep of these waits only. */
  private requestFor(entry: Parked): void {
    this.targeted.add(entry)
    Deferred.doneUnsafe(this.wake, Exit.void)
  }

  /** Adds what the payload of `processed` says about `entry` to `match`. */
  private matchInto(match: Match, entry: Parked, key: string, ids: ReadonlySet<string>): void {
    const direct = this.fastPath(entry.baseName, key)
    for (const id of entry.eventIds) {
      if (!ids.has(id)) continue
      if (direct) match.settled.add(id)
      else match.sweep = true
    }
  }

  private apply(entry: Parked, match: Match): void {
    if (match.settled.size > 0) this.settle(entry, match.settled)
    else if (match.sweep) this.requestFor(entry)
  }

  /**
   * A notification arrived (after `signal` was bumped for it): settle the parked waits it names, or, without
   * detail, request a sweep.
   */
  notice(processed: Processed): void {
    const notice: Notice = { generation: this.signal.generation, processed }
    this.recent.push(notice)
    if (this.recent.length > recentNotices) this.recent.shift()
    if (processed === undefined) {
      this.request()
      return
    }
    const named = new Map<Parked, Match>()
    for (const [key, ids] of processed) {
      const baseName = Perspective.parseKey(key).baseName
      const entries = new Set<Parked>()
      for (const id of ids) for (const entry of this.byEvent.get(id) ?? []) if (entry.baseName === baseName) entries.add(entry)
      for (const entry of entries) {
        const match = named.get(entry) ?? { settled: new Set<string>(), sweep: false }
        named.set(entry, match)
        this.matchInto(match, entry, key, ids)
      }
    }
    for (const [entry, match] of named) this.apply(entry, match)
  }

  /**
   * Parks until a notification after change `generation` settles at least one of `eventIds` for the perspective
   * (named in its payload, or by a sweep). Interrupting the wait unparks it.
   */
  park(perspectiveName: string, eventIds: ReadonlyArray<string>, generation: number): Effect.Effect<Settled> {
    return Effect.suspend(() => {
      const entry: Parked = {
        perspectiveName,
        baseName: Perspective.parseKey(perspectiveName).baseName,
        eventIds,
        generation,
        done: Deferred.makeUnsafe<Settled>()
      }
      this.parked.add(entry)
      for (const id of eventIds) {
        const entries = this.byEvent.get(id)
        if (entries === undefined) this.byEvent.set(id, new Set([entry]))
        else entries.add(entry)
      }
      const missed = this.signal.generation - generation
      if (missed > 0) {
        const replay = this.recent.filter((n) => n.generation > generation)
        const match: Match = { settled: new Set(), sweep: false }
        for (const notice of replay) {
          for (const [key, ids] of notice.processed ?? []) {
            if (Perspective.parseKey(key).baseName === entry.baseName) this.matchInto(match, entry, key, ids)
          }
        }
        if (match.settled.size > 0 || match.sweep) this.apply(entry, match)
        else if (replay.length < missed || replay.some((n) => n.processed === undefined)) this.request()
      }
      return Deferred.await(entry.done).pipe(Effect.ensuring(Effect.sync(() => this.unpark(entry))))
    })
  }

  /** The sweeper fiber: one sweep per batch of requests, for as long as `scope` lives. */
  start(scope: Scope.Scope): Effect.Effect<void> {
    const once = Effect.suspend(() =>
      Effect.andThen(
        Deferred.await(this.wake),
        Effect.suspend(() => {
          // Replaced before the snapshot: a request from now on runs the next sweep.
          this.wake = Deferred.makeUnsafe<void>()
          const batch = this.full ? [...this.parked] : [...this.targeted].filter((entry) => this.parked.has(entry))
          this.full = false
          this.targeted = new Set()
          return batch.length === 0 ? Effect.void : this.sweep(batch, this.signal.generation)
        })
      )
    )
    return Effect.asVoid(Effect.forkIn(Effect.forever(once), scope))
  }

  /**
   * Completes a wait from a notification. The answer keeps the wait's own generation: notifications since then
   * were not all checked for its other ids, so parking again replays them (or sweeps).
   */
  private unpark(entry: Parked): void {
    if (!this.parked.delete(entry)) return
    for (const id of entry.eventIds) {
      const entries = this.byEvent.get(id)
      entries?.delete(entry)
      if (entries?.size === 0) this.byEvent.delete(id)
    }
  }

  private settle(entry: Parked, processed: ReadonlySet<string>): void {
    this.unpark(entry)
    Deferred.doneUnsafe(
      entry.done,
      Exit.succeed<Settled>({
        pendingEventIds: entry.eventIds.filter((id) => !processed.has(id)),
        deadLetteredEventIds: [],
        generation: entry.generation
      })
    )
  }

  private sweep(batch: ReadonlyArray<Parked>, generation: number): Effect.Effect<void> {
    this.sweeps++
    const byPerspective = new Map<string, Array<Parked>>()
    for (const entry of batch) {
      const list = byPerspective.get(entry.perspectiveName)
      if (list === undefined) byPerspective.set(entry.perspectiveName, [entry])
      else list.push(entry)
    }
    return Effect.forEach(
      byPerspective,
      ([perspectiveName, entries]) =>
        this.classify(perspectiveName, [...new Set(entries.flatMap((e) => e.eventIds))]).pipe(
          Effect.map(({ deadLettered, failing, pending }) => {
            const pendingSet = new Set(pending)
            const deadSet = new Set(deadLettered)
            const held = new Map((failing ?? []).map((h) => [h.eventId, h]))
            for (const entry of entries) {
              const stillPending = entry.eventIds.filter((id) => pendingSet.has(id))
              const failingHere = entry.eventIds.flatMap((id) => {
                const h = held.get(id)
                return h === undefined ? [] : [h]
              })
              if (stillPending.length === entry.eventIds.length && failingHere.length === 0) continue
              this.unpark(entry)
              Deferred.doneUnsafe(
                entry.done,
                Exit.succeed<Settled>({
                  pendingEventIds: stillPending,
                  deadLetteredEventIds: entry.eventIds.filter((id) => deadSet.has(id)),
                  ...(failingHere.length === 0 ? {} : { failing: failingHere }),
                  generation
                })
              )
            }
          }),
          // The waits stay parked: the next signal or their safety-net poll asks again.
          Effect.catch((error) => Effect.logWarning("sync sweep failed; the parked waits stay pending", error))
        ),
      { concurrency: "unbounded", discard: true }
    )
  }
}
