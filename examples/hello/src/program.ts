/** Appends three events to a new stream and reads them back. */
import { EventId, EventStore } from "@whizbang/core"
import { Effect } from "effect"
import { AccountOpened, MoneyDeposited } from "./events.js"

export const program = Effect.gen(function* () {
  const store = yield* EventStore.EventStore
  const accountId = EventId.unsafeMake()
  const appended = yield* store.append(
    accountId,
    [
      AccountOpened.make({ accountId, owner: "Ada" }),
      MoneyDeposited.make({ accountId, amount: 100 }),
      MoneyDeposited.make({ accountId, amount: 42 })
    ],
    { expectedVersion: "noStream", scope: { userId: "ada" } }
  )
  yield* Effect.log(`appended ${appended.events.length} events to stream ${accountId}`)
  const events = yield* store.readStream(accountId)
  return { accountId, events }
})
