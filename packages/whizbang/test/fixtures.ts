// One account perspective for the umbrella's own tests.
import { Effect, Schema } from "effect"
import { EventDefinition, EventRegistry, Perspective } from "whizbang"

export const Deposited = EventDefinition.make("Deposited", {
  payload: Schema.Struct({ accountId: Schema.String, amount: Schema.Number }),
  streamId: (p) => p.accountId
})

export const definitions = Effect.gen(function* () {
  const events = yield* EventRegistry.make([Deposited])
  const balance = yield* Perspective.make({
    name: "balance",
    model: Schema.Struct({ total: Schema.Number }),
    initial: { total: 0 },
    apply: { Deposited: (m, e) => ({ total: m.total + (e.payload as { amount: number }).amount }) }
  })
  return { events, perspectives: [balance] }
})

export const fast = {
  pollingIntervalMilliseconds: 50,
  notifyHealthyPollingIntervalMilliseconds: 50,
  drainBatcher: { slidingWindowMilliseconds: 2, maxWaitMilliseconds: 20, maxSize: 100 }
}
