/**
 * The entries of a `ProcessedEventCache` and every change to them, synchronous and at the time `now` each is given;
 * the cache wraps them in effects (the clock, the observer). A hot path: no operation allocates per id beyond what
 * it returns.
 */

/** The value of an in-flight entry in the cache's one map (a retained entry's value is its TTL's start, a time). */
const inFlightMark = Number.NEGATIVE_INFINITY

/**
 * One map for both phases (an id's value: `inFlightMark`, or when its retention started), so a lookup is one
 * probe, and the retention order in a queue beside it. An in-flight Set next to a retained Map cost about twice
 * as much per work id (bench/README.md, tenth pass). A queue entry is stale once its id left that retention
 * (re-added, removed, evicted): its stamp no longer equals the map's, and eviction skips it.
 */
export interface Entries {
  readonly ttl: number
  readonly maxRetained: number
  readonly entries: Map<string, number>
  queueIds: Array<string>
  queueStarts: Array<number>
  head: number
  retainedCount: number
}

/** No entries; retained ones match for `ttl` ms, and at most `maxRetained` of them are kept past an eviction. */
export const empty = (ttl: number, maxRetained: number): Entries => ({
  ttl,
  maxRetained,
  entries: new Map<string, number>(),
  queueIds: [],
  queueStarts: [],
  head: 0,
  retainedCount: 0
})

const alive = (state: Entries, start: number, now: number) => now - start < state.ttl

/** `true` while the id is in flight, or retained and within its TTL. */
export const has = (state: Entries, id: string, now: number): boolean => {
  const value = state.entries.get(id)
  return value !== undefined && (value === inFlightMark || alive(state, value, now))
}

/** Marks ids as in flight; returns those that were not already. */
export const markInFlight = (state: Entries, ids: Iterable<string>): Array<string> => {
  const { entries } = state
  const added: Array<string> = []
  for (const id of ids) {
    const value = entries.get(id)
    if (value === inFlightMark) continue
    if (value !== undefined) state.retainedCount--
    entries.set(id, inFlightMark)
    added.push(id)
  }
  return added
}

/** Starts the TTL of those ids still in flight, at `now`; returns how many. */
export const activateRetentionOf = (state: Entries, ids: Iterable<string>, now: number): number => {
  const { entries, queueIds, queueStarts } = state
  let count = 0
  for (const id of ids) {
    if (entries.get(id) !== inFlightMark) continue
    entries.set(id, now)
    queueIds.push(id)
    queueStarts.push(now)
    count++
  }
  state.retainedCount += count
  return count
}

/** Removes these ids whatever their phase; returns those that were present. */
export const removeRange = (state: Entries, ids: Iterable<string>): Array<string> => {
  const { entries } = state
  const gone: Array<string> = []
  for (const id of ids) {
    const value = entries.get(id)
    if (value === undefined) continue
    if (value !== inFlightMark) state.retainedCount--
    entries.delete(id)
    gone.push(id)
  }
  return gone
}

export const inFlightIds = (state: Entries): Array<string> => {
  const ids: Array<string> = []
  for (const [id, value] of state.entries) if (value === inFlightMark) ids.push(id)
  return ids
}

/** Removes retained entries past their TTL, and the oldest beyond `maxRetained`; returns how many. */
export const evictExpired = (state: Entries, now: number): number => {
  const { entries, queueIds, queueStarts } = state
  // The queue is in the order retentions started, each stamped with the current time, so the oldest come
  // first: stop at the first live one (once the count is within the bound). Stale entries are skipped.
  let count = 0
  let head = state.head
  while (head < queueIds.length) {
    const id = queueIds[head]!
    const start = queueStarts[head]!
    if (entries.get(id) === start) {
      if (alive(state, start, now) && state.retainedCount <= state.maxRetained) break
      entries.delete(id)
      state.retainedCount--
      count++
    }
    head++
  }
  // Amortised O(1): the consumed front is dropped once it is most of the queue.
  if (head > 1024 && head * 2 > queueIds.length) {
    state.queueIds = queueIds.slice(head)
    state.queueStarts = queueStarts.slice(head)
    head = 0
  }
  state.head = head
  return count
}

/** Entries that still match: in flight plus retained within their TTL. */
export const liveCount = (state: Entries, now: number): number => {
  let live = 0
  for (const value of state.entries.values()) if (value === inFlightMark || alive(state, value, now)) live++
  return live
}
