// One account perspective for the umbrella's own tests.
import { Effect, Schema } from "effect"
import { EventDefinition, EventRegistry, Perspective } from "whizbang"

export const Deposited = EventDefinition.make("Deposited", {
  payload: Schema.Struct({ accountId: Schema.String, amount: Schema.Number }),
  streamId: (p) => p.accountId
})

export const balance = Perspective.make({
  name: "balance",
  events: [Deposited],
  model: Schema.Struct({ total: Schema.Number }),
  initial: { total: 0 },
  apply: { Deposited: (m, e) => ({ total: m.total + e.payload.amount }) }
})

export const definitions = Effect.sync(() => ({ events: EventRegistry.make([Deposited]), perspectives: [balance] }))

export const fast = {
  pollingIntervalMilliseconds: 50,
  notifyHealthyPollingIntervalMilliseconds: 50,
  drainBatcher: { slidingWindowMilliseconds: 2, maxWaitMilliseconds: 20, maxSize: 100 }
}
