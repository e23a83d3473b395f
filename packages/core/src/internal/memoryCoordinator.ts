/**
 * The in-memory `WorkCoordinator`'s state (`WorkCoordinator.makeMemory`), and each of its operations over it.
 * Leases, stream affinity, attempts and cursors behave as in Postgres, but completions are not fenced. Each
 * operation runs synchronously, at the time `now` it is given.
 */
import type { PerspectiveCompletion, PerspectiveFailure } from "../CompletionStrategy.js"
import { PerspectiveStatus } from "../PerspectiveStatus.js"
import type { MemoryCursor, MemoryWorkRow, PendingEvent, Shape } from "../WorkCoordinator.js"

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** The work rows by work id and the cursors by {@link cursorKey}. */
export interface MemoryState {
  readonly rows: Map<string, Mutable<MemoryWorkRow>>
  readonly cursors: Map<string, MemoryCursor>
}

export const empty = (): MemoryState => ({ rows: new Map(), cursors: new Map() })

const byOrder = (a: MemoryWorkRow, b: MemoryWorkRow) =>
  a.streamId.localeCompare(b.streamId) ||
  a.perspectiveName.localeCompare(b.perspectiveName) ||
  (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0)

const cursorKey = (streamId: string, perspectiveName: string) => `${streamId}\u0000${perspectiveName}`
const leasedBy = (row: MemoryWorkRow, instanceId: string, now: number) => row.instanceId === instanceId && (row.leaseExpiry ?? 0) > now
const leasedByOther = (row: MemoryWorkRow, instanceId: string, now: number) =>
  row.instanceId !== undefined && row.instanceId !== instanceId && (row.leaseExpiry ?? 0) > now

export const claimWork = (
  { rows }: MemoryState,
  { exclude, instanceId, leaseSeconds, maxStreams, perspectiveNames }: Parameters<Shape["claimWork"]>[0],
  now: number
): ReadonlyArray<string> => {
  const blocked = new Set<string>(exclude ?? [])
  const runs = perspectiveNames === undefined ? () => true : (name: string) => perspectiveNames.includes(name)
  for (const row of rows.values()) if (leasedByOther(row, instanceId, now)) blocked.add(row.streamId)
  const oldest = new Map<string, string>()
  for (const row of rows.values()) {
    if (blocked.has(row.streamId) || !runs(row.perspectiveName)) continue
    const seen = oldest.get(row.streamId)
    if (seen === undefined || row.eventId < seen) oldest.set(row.streamId, row.eventId)
  }
  const streams = [...oldest]
    .sort((a, b) => (a[1] < b[1] ? -1 : 1))
    .slice(0, maxStreams)
    .map(([id]) => id)
  const chosen = new Set(streams)
  for (const row of rows.values()) {
    if (!chosen.has(row.streamId)) continue
    row.instanceId = instanceId
    row.leaseExpiry = now + leaseSeconds * 1000
  }
  return streams
}

export const fetchPendingEvents = (
  { rows }: MemoryState,
  { instanceId, streamIds, limit, perspectiveNames }: Parameters<Shape["fetchPendingEvents"]>[0],
  now: number
): ReadonlyArray<PendingEvent> => {
  const wanted = new Set(streamIds)
  const perGroup = new Map<string, number>()
  const out: Array<PendingEvent> = []
  for (const row of [...rows.values()].sort(byOrder)) {
    if (!wanted.has(row.streamId) || !leasedBy(row, instanceId, now)) continue
    if (perspectiveNames !== undefined && !perspectiveNames.includes(row.perspectiveName)) continue
    const key = cursorKey(row.streamId, row.perspectiveName)
    const n = perGroup.get(key) ?? 0
    if (limit !== undefined && n >= limit) continue
    perGroup.set(key, n + 1)
    const { workId, streamId, perspectiveName, eventId, eventType, payload, attempts } = row
    out.push({ workId, streamId, perspectiveName, eventId, eventType, payload, attempts })
  }
  return out
}

export const reportCompletions = ({ rows, cursors }: MemoryState, completions: ReadonlyArray<PerspectiveCompletion>): void => {
  for (const c of completions) {
    for (const workId of c.workIds) rows.delete(workId)
    if (c.lastEventId === undefined) continue
    cursors.set(cursorKey(c.streamId, c.perspectiveName), {
      streamId: c.streamId,
      perspectiveName: c.perspectiveName,
      lastEventId: c.lastEventId,
      status: c.status
    })
  }
}

export const reportFailures = ({ rows, cursors }: MemoryState, failures: ReadonlyArray<PerspectiveFailure>): void => {
  for (const f of failures) {
    const row = rows.get(f.workId)
    if (row !== undefined) {
      if (f.countsAttempt !== false) row.attempts++
      row.error = f.error
      delete row.instanceId
      delete row.leaseExpiry
    }
    const key = cursorKey(f.streamId, f.perspectiveName)
    const previous = cursors.get(key)
    cursors.set(key, {
      streamId: f.streamId,
      perspectiveName: f.perspectiveName,
      ...(previous?.lastEventId === undefined ? {} : { lastEventId: previous.lastEventId }),
      status: PerspectiveStatus.Failed,
      error: f.error
    })
  }
}

export const renewLeases = (
  { rows }: MemoryState,
  { instanceId, workIds, leaseSeconds }: Parameters<Shape["renewLeases"]>[0],
  now: number
): number => {
  let renewed = 0
  for (const workId of workIds) {
    const row = rows.get(workId)
    if (row === undefined || !leasedBy(row, instanceId, now)) continue
    row.leaseExpiry = now + leaseSeconds * 1000
    renewed++
  }
  return renewed
}

export const renewStreamLeases = (
  { rows }: MemoryState,
  { instanceId, streamIds, leaseSeconds }: Parameters<Shape["renewStreamLeases"]>[0],
  now: number
): ReadonlyArray<string> => {
  const wanted = new Set(streamIds)
  const held = new Set<string>()
  for (const row of rows.values()) {
    if (!wanted.has(row.streamId) || !leasedBy(row, instanceId, now)) continue
    row.leaseExpiry = now + leaseSeconds * 1000
    held.add(row.streamId)
  }
  return [...held]
}

/** Seeds work rows; a work id already held is kept as it is. */
export const enqueue = ({ rows }: MemoryState, work: ReadonlyArray<Omit<PendingEvent, "attempts">>): void => {
  for (const w of work) if (!rows.has(w.workId)) rows.set(w.workId, { ...w, attempts: 0 })
}

/** Copies of the work rows, in stream, perspective and event-id order. */
export const workRows = ({ rows }: MemoryState): ReadonlyArray<MemoryWorkRow> => [...rows.values()].sort(byOrder).map((row) => ({ ...row }))
