/**
 * The benchmark's domain and data, shared by every system so they all do the same work.
 *
 * One event type, `Deposited { accountId, amount, seq }`, and two read models per stream:
 * - `counter` (a counter/sum): `{ count, sum }`;
 * - `summary` (a small document): `{ version, last, max, ordered }` — order-sensitive: `ordered` turns false for
 *   good if an event is applied out of stream order, and `version`/`last` name the last event applied.
 *
 * The data is a pure function of a global event index `i`: stream `i % streams`, sequence `floor(i / streams) + 1`,
 * amount `(i * 7919) % 997 + 1`. Every system loads it (SQL generates it from the same formulas) and every read
 * model is checked against the fold computed here.
 */
import { EventDefinition, EventRegistry, Perspective } from "@whizbang/core"
import { Schema } from "effect"

export interface Counter {
  readonly count: number
  readonly sum: number
}
export interface Summary {
  readonly version: number
  readonly last: number
  readonly max: number
  readonly ordered: boolean
}
export interface Payload {
  readonly accountId: string
  readonly amount: number
  readonly seq: number
}

export const counterInitial: Counter = { count: 0, sum: 0 }
export const summaryInitial: Summary = { version: 0, last: 0, max: 0, ordered: true }

export const foldCounter = (m: Counter, e: Payload): Counter => ({ count: m.count + 1, sum: m.sum + e.amount })
export const foldSummary = (m: Summary, e: Payload): Summary => ({
  version: e.seq,
  last: e.amount,
  max: Math.max(m.max, e.amount),
  ordered: m.ordered && e.seq === m.version + 1
})

/** The stream id of stream number `s` (a valid uuid, so every system can key by it). */
export const streamId = (s: number) => `00000000-0000-4000-8000-${s.toString(16).padStart(12, "0")}`
export const amountOf = (i: number) => ((i * 7919) % 997) + 1

/** SQL expressions of the same formulas, over a bigint `i` and the stream count `$streams` (given as a literal). */
export const sql = {
  stream: (i: string, streams: number) => `('00000000-0000-4000-8000-' || lpad(to_hex(${i} % ${streams}), 12, '0'))::uuid`,
  seq: (i: string, streams: number) => `(${i} / ${streams} + 1)`,
  amount: (i: string) => `((${i} * 7919) % 997 + 1)`,
  /** A UUIDv7-shaped, time-ordered event id: the 48-bit time is `base + i` ms, the low bits repeat `i`. */
  eventId: (i: string, baseMs: number) =>
    `(lpad(to_hex(${baseMs}::bigint + ${i}), 12, '0') || '7000' || '8000' || lpad(to_hex(${i}), 12, '0'))::uuid`
}

/** Loaded events' ids are stamped from this time on (hours in the past, so live appends sort after them). */
export const baseMs = Date.now() - 6 * 3600_000

/** The folds every stream must end with after events `[0, events)` over `streams` streams. */
export const expected = (events: number, streams: number) => {
  const counter = new Map<string, Counter>()
  const summary = new Map<string, Summary>()
  for (let i = 0; i < events; i++) {
    const id = streamId(i % streams)
    const e = { accountId: id, amount: amountOf(i), seq: Math.floor(i / streams) + 1 }
    counter.set(id, foldCounter(counter.get(id) ?? counterInitial, e))
    summary.set(id, foldSummary(summary.get(id) ?? summaryInitial, e))
  }
  return { counter, summary }
}

export type Expected = ReturnType<typeof expected>

/** Compares one read model's stored rows with its folds; returns up to `limit` mismatches (empty = consistent). */
export const verifyModel = (
  name: string,
  want: ReadonlyMap<string, object>,
  got: ReadonlyMap<string, unknown>,
  limit = 10
): Array<string> => {
  const problems: Array<string> = []
  if (got.size !== want.size) problems.push(`${name}: ${got.size} rows, expected ${want.size}`)
  for (const [id, model] of want) {
    const row = got.get(id) as Record<string, unknown> | undefined
    const same = row !== undefined && Object.entries(model).every(([k, v]) => row[k] === v)
    if (!same && problems.length < limit) problems.push(`${name} ${id}: ${JSON.stringify(row)} != ${JSON.stringify(model)}`)
  }
  return problems
}

/** Compares stored models with the folds; returns a list of mismatches (empty = consistent). */
export const verify = (
  want: Expected,
  got: { readonly counter: ReadonlyMap<string, unknown>; readonly summary: ReadonlyMap<string, unknown> }
): Array<string> =>
  [...verifyModel("counter", want.counter, got.counter), ...verifyModel("summary", want.summary, got.summary)].slice(0, 10)

// Whizbang definitions of the same domain.
export const Deposited = EventDefinition.make("Deposited", {
  payload: Schema.Struct({ accountId: Schema.String, amount: Schema.Number, seq: Schema.Number }),
  streamId: (p) => p.accountId
})
export const registry = EventRegistry.make([Deposited])

export const counterPerspective = Perspective.make({
  name: "counter",
  events: [Deposited],
  model: Schema.Struct({ count: Schema.Number, sum: Schema.Number }),
  initial: counterInitial,
  apply: { Deposited: (m, e) => foldCounter(m, e.payload) }
})
export const summaryPerspective = Perspective.make({
  name: "summary",
  events: [Deposited],
  model: Schema.Struct({ version: Schema.Number, last: Schema.Number, max: Schema.Number, ordered: Schema.Boolean }),
  initial: summaryInitial,
  apply: { Deposited: (m, e) => foldSummary(m, e.payload) }
})
export const perspectives = [counterPerspective, summaryPerspective]

/**
 * Version 2 of `counter` (scenario v): a changed apply and model, `{ count, sum, squares }` (the sum of the squared
 * amounts), rebuilt from history beside version 1 (key `counter__v2`, table `wh_per_counter__v2`).
 */
export interface CounterV2 {
  readonly count: number
  readonly sum: number
  readonly squares: number
}
export const counterV2Initial: CounterV2 = { count: 0, sum: 0, squares: 0 }
export const foldCounterV2 = (m: CounterV2, e: Payload): CounterV2 => ({
  count: m.count + 1,
  sum: m.sum + e.amount,
  squares: m.squares + e.amount * e.amount
})
export const counterV2Perspective = Perspective.make({
  name: "counter",
  version: 2,
  events: [Deposited],
  model: Schema.Struct({ count: Schema.Number, sum: Schema.Number, squares: Schema.Number }),
  initial: counterV2Initial,
  apply: { Deposited: (m, e) => foldCounterV2(m, e.payload) }
})
/** What the new deploy of scenario v runs: both version-1 perspectives and counter's version 2. */
export const perspectivesWithV2 = [counterPerspective, summaryPerspective, counterV2Perspective]

/** The `counter__v2` folds after events `[0, events)` over `streams` streams. */
export const expectedCounterV2 = (events: number, streams: number) => {
  const out = new Map<string, CounterV2>()
  for (let i = 0; i < events; i++) {
    const id = streamId(i % streams)
    out.set(id, foldCounterV2(out.get(id) ?? counterV2Initial, { accountId: id, amount: amountOf(i), seq: Math.floor(i / streams) + 1 }))
  }
  return out
}
