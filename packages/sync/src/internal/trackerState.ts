/**
 * The mutable heart of `SyncEventTracker`. Every method is synchronous: JavaScript runs one fiber step at a
 * time, so a method body is atomic with respect to every other fiber. That is what makes "check, then register
 * the waiter" free of lost wake-ups, and what makes each waiter complete exactly once (it is removed from every
 * index in the same step that completes its Deferred).
 *
 * @internal
 */
import { Deferred, Exit } from "effect"

/** @internal */
export interface Entry {
  readonly eventId: string
  readonly perspectiveName: string
  readonly streamId: string
  readonly eventType: string
  readonly trackedAt: number
}

/** `perspectiveName === undefined`: waits until no perspective has the event any more. @internal */
export interface Waiter {
  readonly awaiterId: string
  readonly perspectiveName: string | undefined
  readonly remaining: Set<string>
  readonly deferred: Deferred.Deferred<boolean>
}

/** An event's entries, by perspective, and when the first of them was tracked. */
interface Tracked {
  readonly firstTrackedAt: number
  readonly perspectives: Map<string, Entry>
}

/** @internal */
export class TrackerState {
  /**
   * eventId -> its entries. Insertion order is the order events were first tracked, so the stale cleanup walks
   * from the oldest and stops at the first event tracked after its cutoff.
   */
  private readonly byEvent = new Map<string, Tracked>()
  /** perspectiveName -> eventId -> entry: what a perspective still has pending, without walking every event. */
  private readonly byPerspective = new Map<string, Map<string, Entry>>()
  private readonly waitersByEvent = new Map<string, Set<Waiter>>()
  private readonly waitersByAwaiter = new Map<string, Set<Waiter>>()
  /**
   * `(perspective, event)` marks that found nothing to remove, most recent last: a worker elsewhere can commit an
   * event (and its notification arrive) before the append that wrote it returned here and tracked it. A track
   * of a pair marked here is dropped at once. Bounded: the oldest go first.
   */
  private readonly marked = new Set<string>()
  /**
   * The keys of `marked` in the order they came: a ring of at most `rememberedMarks` slots, grown as marks come (a
   * tracker per tenant's services, most of which never fill it); once full, the next slot holds the oldest.
   * Evicting through `marked.values().next()` instead walked past every key deleted since the set last compacted
   * (V8 keeps them as holes): 13 µs a mark at 65,536 remembered, 2.5 s of a tenant worker process's event loop over a
   * 100,000-event replay (bench t's CPU profile); the ring makes it 0.3 µs.
   */
  private readonly markOrder: Array<string> = []
  private nextMark = 0
  /** How many entries are tracked. */
  size = 0
  signalled = 0

  track(entry: Entry): void {
    if (this.marked.has(markKey(entry.eventId, entry.perspectiveName))) return
    let tracked = this.byEvent.get(entry.eventId)
    if (tracked === undefined) {
      tracked = { firstTrackedAt: entry.trackedAt, perspectives: new Map() }
      this.byEvent.set(entry.eventId, tracked)
    }
    if (tracked.perspectives.has(entry.perspectiveName)) return
    tracked.perspectives.set(entry.perspectiveName, entry)
    let events = this.byPerspective.get(entry.perspectiveName)
    if (events === undefined) this.byPerspective.set(entry.perspectiveName, (events = new Map()))
    events.set(entry.eventId, entry)
    this.size++
  }

  entries(): Array<Entry> {
    const out: Array<Entry> = []
    for (const tracked of this.byEvent.values()) out.push(...tracked.perspectives.values())
    return out
  }

  /** The entries of one perspective. */
  entriesOf(perspectiveName: string): Array<Entry> {
    return [...(this.byPerspective.get(perspectiveName)?.values() ?? [])]
  }

  isDone(eventId: string, perspectiveName: string | undefined): boolean {
    const tracked = this.byEvent.get(eventId)
    return tracked === undefined || (perspectiveName !== undefined && !tracked.perspectives.has(perspectiveName))
  }

  /** Removes entries (all perspectives of the event when `perspectiveName` is undefined) and wakes waiters. */
  remove(eventId: string, perspectiveName: string | undefined): void {
    const tracked = this.byEvent.get(eventId)
    if (tracked === undefined || (perspectiveName !== undefined && !tracked.perspectives.has(perspectiveName))) {
      if (perspectiveName !== undefined) this.remember(markKey(eventId, perspectiveName))
      return
    }
    if (perspectiveName === undefined) for (const name of [...tracked.perspectives.keys()]) this.drop(eventId, tracked, name)
    else this.drop(eventId, tracked, perspectiveName)
    for (const waiter of [...(this.waitersByEvent.get(eventId) ?? [])]) {
      if (!this.isDone(eventId, waiter.perspectiveName)) continue
      waiter.remaining.delete(eventId)
      this.unindex(waiter, eventId)
      if (waiter.remaining.size === 0) this.finish(waiter, true)
    }
  }

  /** A key remembered already keeps its place (a pair is marked again by its notification after the local mark). */
  private remember(key: string): void {
    if (this.marked.has(key)) return
    this.marked.add(key)
    if (this.markOrder.length < rememberedMarks) {
      this.markOrder.push(key)
      return
    }
    this.marked.delete(this.markOrder[this.nextMark]!)
    this.markOrder[this.nextMark] = key
    this.nextMark = (this.nextMark + 1) % rememberedMarks
  }

  /** Removes one tracked entry from every index. */
  private drop(eventId: string, tracked: Tracked, perspectiveName: string): void {
    if (!tracked.perspectives.delete(perspectiveName)) return
    if (tracked.perspectives.size === 0) this.byEvent.delete(eventId)
    const events = this.byPerspective.get(perspectiveName)
    events?.delete(eventId)
    if (events?.size === 0) this.byPerspective.delete(perspectiveName)
    this.size--
  }

  /** Registers a waiter for what is not done yet; undefined when everything is already done. */
  register(
    eventIds: Iterable<string>,
    perspectiveName: string | undefined,
    awaiterId: string,
    deferred: Deferred.Deferred<boolean>
  ): Waiter | undefined {
    const remaining = new Set<string>()
    for (const id of eventIds) if (!this.isDone(id, perspectiveName)) remaining.add(id)
    if (remaining.size === 0) return undefined
    const waiter: Waiter = { awaiterId, perspectiveName, remaining, deferred }
    for (const id of remaining) addTo(this.waitersByEvent, id, waiter)
    addTo(this.waitersByAwaiter, awaiterId, waiter)
    return waiter
  }

  /** Removes a waiter without completing it (its fiber timed out or was interrupted). */
  unregister(waiter: Waiter): void {
    for (const id of waiter.remaining) this.unindex(waiter, id)
    removeFrom(this.waitersByAwaiter, waiter.awaiterId, waiter)
  }

  cancelAwaiter(awaiterId: string): number {
    const waiters = [...(this.waitersByAwaiter.get(awaiterId) ?? [])]
    for (const waiter of waiters) this.finish(waiter, false)
    return waiters.length
  }

  /**
   * Drops entries tracked at or before `cutoff`; waiters that needed one of them are released with false. Walks
   * events from the first tracked and stops at the first one tracked after `cutoff` (so it walks the oldest events
   * only, not everything tracked); a wall clock that steps back only delays the cleanup of what it tracked meanwhile.
   */
  removeStale(cutoff: number): number {
    const stale: Array<Entry> = []
    for (const tracked of this.byEvent.values()) {
      if (tracked.firstTrackedAt > cutoff) break
      for (const entry of tracked.perspectives.values()) if (entry.trackedAt <= cutoff) stale.push(entry)
    }
    for (const entry of stale) {
      this.drop(entry.eventId, this.byEvent.get(entry.eventId)!, entry.perspectiveName)
      for (const waiter of [...(this.waitersByEvent.get(entry.eventId) ?? [])]) {
        if (waiter.perspectiveName === undefined || waiter.perspectiveName === entry.perspectiveName) {
          this.finish(waiter, false)
        }
      }
    }
    return stale.length
  }

  waiterCount(): number {
    let count = 0
    for (const waiters of this.waitersByAwaiter.values()) count += waiters.size
    return count
  }

  private finish(waiter: Waiter, result: boolean): void {
    this.unregister(waiter)
    if (Deferred.doneUnsafe(waiter.deferred, Exit.succeed(result))) this.signalled++
  }

  private unindex(waiter: Waiter, eventId: string): void {
    removeFrom(this.waitersByEvent, eventId, waiter)
  }
}

/** How many marks of untracked pairs are remembered (a few seconds of notifications at tens of thousands of events/s). */
const rememberedMarks = 65_536

const markKey = (eventId: string, perspectiveName: string): string => `${perspectiveName}\u0000${eventId}`

const addTo = <K, V>(map: Map<K, Set<V>>, key: K, value: V): void => {
  const set = map.get(key)
  if (set === undefined) map.set(key, new Set([value]))
  else set.add(value)
}

const removeFrom = <K, V>(map: Map<K, Set<V>>, key: K, value: V): void => {
  const set = map.get(key)
  if (set === undefined) return
  set.delete(value)
  if (set.size === 0) map.delete(key)
}
