import { expect, layer } from "@effect/vitest"
import { EventRegistry } from "@whizbang/core"
import { PgClient, PgEventStore, PgMigrator } from "@whizbang/postgres"
import { TestDatabase } from "@whizbang/testing"
import { Effect, Layer } from "effect"
import * as Events from "../src/events.js"
import { program } from "../src/program.js"

const client = Layer.unwrap(
  Effect.map(Effect.service(TestDatabase.TestDatabase), ({ url }) => PgClient.layer({ url, schema: "hello" }))
).pipe(Layer.provide(TestDatabase.layer), Layer.orDie)
const store = Layer.orDie(PgEventStore.layer({ registry: EventRegistry.make(Events.all) }))
const app = store.pipe(Layer.provideMerge(Layer.orDie(PgMigrator.layer)), Layer.provide(client))

layer(app)((it) => {
  it.effect("appends an account's events and reads them back in order", () =>
    Effect.gen(function* () {
      const { accountId, events } = yield* program
      expect(events.map((e) => [e.streamVersion, e.eventType, e.payload])).toEqual([
        [1, "AccountOpened", { accountId, owner: "Ada" }],
        [2, "MoneyDeposited", { accountId, amount: 100 }],
        [3, "MoneyDeposited", { accountId, amount: 42 }]
      ])
      expect(events.every((e) => e.scope.userId === "ada")).toBe(true)
    })
  )
})
