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

/** @internal */
export class TrackerState {
  /** eventId -> perspectiveName -> entry */
  private readonly byEvent = new Map<string, Map<string, Entry>>()
  private readonly waitersByEvent = new Map<string, Set<Waiter>>()
  private readonly waitersByAwaiter = new Map<string, Set<Waiter>>()
  signalled = 0

  track(entry: Entry): void {
    let perspectives = this.byEvent.get(entry.eventId)
    if (perspectives === undefined) this.byEvent.set(entry.eventId, (perspectives = new Map()))
    if (!perspectives.has(entry.perspectiveName)) perspectives.set(entry.perspectiveName, entry)
  }

  entries(): Array<Entry> {
    const out: Array<Entry> = []
    for (const perspectives of this.byEvent.values()) out.push(...perspectives.values())
    return out
  }

  isDone(eventId: string, perspectiveName: string | undefined): boolean {
    const perspectives = this.byEvent.get(eventId)
    return perspectives === undefined || (perspectiveName !== undefined && !perspectives.has(perspectiveName))
  }

  /** Removes entries (all perspectives of the event when `perspectiveName` is undefined) and wakes waiters. */
  remove(eventId: string, perspectiveName: string | undefined): void {
    const perspectives = this.byEvent.get(eventId)
    if (perspectives === undefined) return
    if (perspectiveName === undefined) perspectives.clear()
    else if (!perspectives.delete(perspectiveName)) return
    if (perspectives.size === 0) this.byEvent.delete(eventId)
    for (const waiter of [...(this.waitersByEvent.get(eventId) ?? [])]) {
      if (!this.isDone(eventId, waiter.perspectiveName)) continue
      waiter.remaining.delete(eventId)
      this.unindex(waiter, eventId)
      if (waiter.remaining.size === 0) this.finish(waiter, true)
    }
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

  /** Drops entries tracked at or before `cutoff`; waiters that needed one of them are released with false. */
  removeStale(cutoff: number): number {
    const stale: Array<Entry> = this.entries().filter((e) => e.trackedAt <= cutoff)
    for (const entry of stale) {
      const perspectives = this.byEvent.get(entry.eventId)!
      perspectives.delete(entry.perspectiveName)
      if (perspectives.size === 0) this.byEvent.delete(entry.eventId)
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
