// One account perspective for the umbrella's own tests.
import { TestDatabase } from "@whizbang/testing"
import { Duration, Effect, Schema } from "effect"
import { EventDefinition, EventRegistry, EventStore, Perspective, PgClient } from "whizbang"

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
  pollingInterval: Duration.millis(50),
  notifyHealthyPollingInterval: Duration.millis(50),
  drainBatcher: { slidingWindow: Duration.millis(2), maxWait: Duration.millis(20), maxSize: 100 }
}

/** Version `version` of balance: the same fold, and the version it was written by. */
export const balanceVersion = (version: number) =>
  Perspective.make({
    name: "balance",
    version,
    events: [Deposited],
    model: Schema.Struct({ total: Schema.Number, by: Schema.Number }),
    initial: { total: 0, by: version },
    apply: { Deposited: (m, e) => ({ total: m.total + e.payload.amount, by: version }) }
  })

/** Runs `body` with the URL of a fresh test database. */
export const withDatabase = <A, E>(body: (url: string) => Effect.Effect<A, E, never>) =>
  Effect.scoped(Effect.flatMap(Effect.service(TestDatabase.TestDatabase), ({ url }) => body(url)).pipe(Effect.provide(TestDatabase.layer)))

/** A query on the service's client. */
export const sql = <Row extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (client) => client.query<Row>(text, params))

/** One deposit appended through the service's event store. */
export const deposit = (streamId: string, amount: number) =>
  Effect.flatMap(EventStore.EventStore, (store) => store.append(streamId, [Deposited.make({ accountId: streamId, amount })]))
