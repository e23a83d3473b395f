/**
 * The chaos run's domain: numbered entries on ledger streams, and two perspectives whose models show any lost,
 * duplicated or reordered apply — `ledger` keeps every entry's number in applied order, `totals` counts and sums.
 */
import { EventDefinition, EventRegistry, Perspective } from "@whizbang/core"
import { Schema } from "effect"

/** Entry `seq` (1, 2, 3, ... per stream) of ledger `ledgerId`. */
export const EntryAdded = EventDefinition.make("EntryAdded", {
  payload: Schema.Struct({ ledgerId: Schema.String, seq: Schema.Number }),
  streamId: (p) => p.ledgerId
})

export const events = EventRegistry.make([EntryAdded])

export interface Ledger {
  readonly seqs: ReadonlyArray<number>
}

export interface Totals {
  readonly count: number
  readonly sum: number
}

export const ledger = Perspective.make({
  name: "ledger",
  events: [EntryAdded],
  model: Schema.Struct({ seqs: Schema.Array(Schema.Number) }),
  initial: { seqs: [] },
  apply: { EntryAdded: (m, e) => ({ seqs: [...m.seqs, e.payload.seq] }) }
})

export const totals = Perspective.make({
  name: "totals",
  events: [EntryAdded],
  model: Schema.Struct({ count: Schema.Number, sum: Schema.Number }),
  initial: { count: 0, sum: 0 },
  apply: { EntryAdded: (m, e) => ({ count: m.count + 1, sum: m.sum + e.payload.seq }) }
})

export const perspectives = [ledger, totals]

/** The models a stream of `n` entries must fold to. */
export const fold = (n: number): { readonly ledger: Ledger; readonly totals: Totals } => {
  const seqs = Array.from({ length: n }, (_, i) => i + 1)
  return { ledger: { seqs }, totals: { count: n, sum: (n * (n + 1)) / 2 } }
}

/** The service schema of the chaos run. */
export const schema = "chaos"
