/**
 * The perspective worker's state, and every change to it, in one place.
 *
 * Two parts, shared by the claim loop and the consumer loops (fibers of one process, so no change here ever
 * interleaves with another: each transition runs synchronously):
 *
 * - {@link Progress}: what callers observe (`awaitIdle`, `stats`), an immutable value in a `SubscriptionRef`;
 *   {@link poll} and {@link cycled} compute its next value.
 * - {@link Streams}: where each claimed stream is. A stream is `queued` from its claim until its consumer lets it
 *   go; `gated` while a consumer runs its cycles (one consumer per stream at a time); `prefetched` holds the events
 *   its claim fetched, for its first cycle only; `stalled` remembers streams whose last cycle could not move (until
 *   then they are not claimed, and re-tries of them are not work found). These are mutable sets on purpose: a claim
 *   and a cycle touch up to `maxStreamsPerBatch` ids, and copying the sets at every transition would cost the hot
 *   path allocations for nothing — only the methods below change them.
 */
import type { PendingEvent } from "../WorkCoordinator.js"

/** What callers observe. */
export interface Progress {
  readonly polls: number
  readonly emptyPolls: number
  readonly idle: boolean
  readonly eventsApplied: number
  readonly failures: number
  readonly deduped: number
}

export const initialProgress: Progress = { polls: 0, emptyPolls: 0, idle: true, eventsApplied: 0, failures: 0, deduped: 0 }

/** What one cycle did, as {@link cycled} counts it. */
export interface CycleCounts {
  readonly eventsApplied: number
  readonly failures: number
  readonly deduped: number
}

export const cycled = (progress: Progress, cycle: CycleCounts): Progress => ({
  ...progress,
  eventsApplied: progress.eventsApplied + cycle.eventsApplied,
  failures: progress.failures + cycle.failures,
  deduped: progress.deduped + cycle.deduped
})

/** The worker has work again (a stalled stream moved): not idle until it is drained. */
export const working = (progress: Progress): Progress => ({ ...progress, emptyPolls: 0, idle: false })

/** Where a poll leaves the worker. */
export interface PollVerdict {
  readonly emptyPolls: number
  readonly idle: boolean
}

/**
 * A poll's verdict. A poll is empty only when nothing was claimed AND nothing is queued or in a cycle — re-tries of
 * streams that could not move last time excepted: they are not work found. The worker turns idle after
 * `idleThreshold` empty polls, and active as soon as one finds work.
 */
export const verdict = (
  progress: Progress,
  outcome: { readonly found: number; readonly inFlight: boolean },
  idleThreshold: number
): PollVerdict => {
  const emptyPolls = outcome.found === 0 && !outcome.inFlight ? progress.emptyPolls + 1 : 0
  return { emptyPolls, idle: outcome.found > 0 ? false : progress.idle || emptyPolls >= idleThreshold }
}

/** The poll is counted, and its verdict stands. */
export const polled = (progress: Progress, verdict: PollVerdict): Progress => ({
  ...progress,
  polls: progress.polls + 1,
  emptyPolls: verdict.emptyPolls,
  idle: verdict.idle
})

/** The verdict of a settled worker (no claim ran: see `Streams.afterRelease`) stands; `polls` counts claims only. */
export const settled = (progress: Progress, verdict: PollVerdict): Progress => ({
  ...progress,
  emptyPolls: verdict.emptyPolls,
  idle: verdict.idle
})

/** A consumer's share of a drained batch. */
export interface Batch {
  /** The streams this consumer runs (those no other consumer had). */
  readonly mine: ReadonlyArray<string>
  /** The events their claim fetched, for their first cycle. */
  readonly prefetched: ReadonlyMap<string, ReadonlyArray<PendingEvent>>
  /** Whether the batch keeps the worker busy: not when it only re-tries stalled streams. */
  readonly counts: boolean
}

/** Where each claimed stream is; see the module's overview. */
export class Streams {
  private readonly queued = new Set<string>()
  private readonly gated = new Set<string>()
  private readonly prefetched = new Map<string, ReadonlyArray<PendingEvent>>()
  private readonly stalled = new Map<string, number>()
  private busy = 0
  private claiming = false
  /** The last claim left nothing out and was not cut at its limit: it took every stream claimable then. */
  private lastClaimTookAll = false

  /**
   * @param holdMillis how long a stalled stream is not claimed again
   * @param forgetAfterMillis how long after its hold a stalled stream that was never claimed again is forgotten
   */
  constructor(
    private readonly holdMillis: number,
    private readonly forgetAfterMillis: number
  ) {}

  /** The streams a claim at `now` leaves out: those queued here, and stalled ones still held. */
  exclusions(now: number): Array<string> {
    for (const [id, until] of this.stalled) if (until + this.forgetAfterMillis < now) this.stalled.delete(id)
    const held: Array<string> = []
    for (const [id, until] of this.stalled) if (until > now) held.push(id)
    return [...this.queued, ...held]
  }

  /** Keeps the events a claim fetched with its streams (every claimed stream gets an entry, empty or not). */
  prefetch(streams: ReadonlyArray<string>, pending: ReadonlyArray<PendingEvent>): void {
    const byStream = new Map(streams.map((id) => [id, [] as Array<PendingEvent>]))
    for (const row of pending) byStream.get(row.streamId)?.push(row)
    for (const [id, rows] of byStream) this.prefetched.set(id, rows)
  }

  /** Of a claim, the count of streams that are work found (not re-tries of stalled ones), and whether any is in flight. */
  pollOutcome(claimed: ReadonlyArray<string>): { readonly found: number; readonly inFlight: boolean } {
    const found = claimed.filter((id) => !this.stalled.has(id)).length
    let waiting = false
    for (const id of this.queued) {
      if (!this.stalled.has(id)) {
        waiting = true
        break
      }
    }
    return { found, inFlight: this.busy > 0 || waiting }
  }

  /**
   * Queues the claimed streams not already queued or in a cycle here, and returns them. A duplicate would only keep
   * the drain window sliding and make consumers skip; its newer events are claimed after its cycle.
   */
  enqueue(claimed: ReadonlyArray<string>): Array<string> {
    const fresh = claimed.filter((id) => !this.queued.has(id))
    for (const id of fresh) this.queued.add(id)
    return fresh
  }

  /** A consumer takes the drained streams no other consumer is running, with their prefetched events. */
  take(items: ReadonlyArray<string>): Batch {
    const mine = items.filter((id) => !this.gated.has(id))
    const prefetched = new Map<string, ReadonlyArray<PendingEvent>>()
    for (const id of mine) {
      this.gated.add(id)
      const rows = this.prefetched.get(id)
      if (rows !== undefined) prefetched.set(id, rows)
      this.prefetched.delete(id)
    }
    const counts = mine.some((id) => !this.stalled.has(id))
    if (counts) this.busy++
    return { mine, prefetched, counts }
  }

  /**
   * The consumer is done with its batch. Prefetched events of every drained stream go, also of those it skipped
   * (another consumer was running them): by a later cycle those events may be applied.
   */
  release(items: ReadonlyArray<string>, batch: Batch): void {
    if (batch.counts) this.busy--
    for (const id of batch.mine) {
      this.gated.delete(id)
      this.queued.delete(id)
    }
    for (const id of items) this.prefetched.delete(id)
  }

  /**
   * Records which streams of a cycle could not move (held until `now + holdMillis`) and which moved again. Returns
   * whether a stalled stream moved: that is work, and the worker is not idle until it is drained.
   */
  cycled(batch: ReadonlyArray<string>, stuck: ReadonlySet<string>, now: number): boolean {
    const moved = batch.some((id) => this.stalled.has(id) && !stuck.has(id))
    const until = now + this.holdMillis
    for (const id of batch) {
      if (stuck.has(id)) this.stalled.set(id, until)
      else this.stalled.delete(id)
    }
    return moved
  }

  /** A claim starts: until it ends, a consumer that finishes leaves the verdict to it. */
  claimStarts(): void {
    this.claiming = true
  }

  /** A claim ended: whether it took every stream claimable then (it left none out, was not cut at its limit, did not fail). */
  claimEnds(tookAll: boolean): void {
    this.claiming = false
    this.lastClaimTookAll = tookAll
  }

  /**
   * What a consumer that let its streams go leaves to do, with NOTIFY wake-ups heard (`notified`):
   * - `"claim"`: claim again now — a claim ran while streams were queued or in a cycle here (their newer events were
   *   left out), or the last one was cut at its limit, or no wake-ups are heard (only a claim finds what was
   *   appended meanwhile);
   * - `"settle"`: nothing is queued or in a cycle, and the last claim took every claimable stream with nothing
   *   appended since (an append would have woken the claim loop, whose claim would then be the last one): the
   *   worker is where an empty claim would leave it, without running one;
   * - `"none"`: other streams are still queued or in a cycle; the consumer that lets the last of them go decides.
   */
  afterRelease(notified: boolean): "claim" | "settle" | "none" {
    if (!notified || this.claiming || !this.lastClaimTookAll) return "claim"
    return this.queued.size === 0 && this.busy === 0 ? "settle" : "none"
  }

  /** Claimed streams wait for a consumer (in the drain queue or an open batch). */
  othersWaiting(): boolean {
    return this.queued.size > this.gated.size
  }

  /** Consumers in a cycle now (batches that count). */
  inCycle(): number {
    return this.busy
  }
}
