/** The example's events: a tiny bank account. */
import { EventDefinition } from "@whizbang/core"
import { Schema } from "effect"

export const AccountOpened = EventDefinition.make("AccountOpened", {
  payload: Schema.Struct({ accountId: Schema.String, owner: Schema.String }),
  streamId: (p) => p.accountId
})

export const MoneyDeposited = EventDefinition.make("MoneyDeposited", {
  payload: Schema.Struct({ accountId: Schema.String, amount: Schema.Number }),
  streamId: (p) => p.accountId
})

export const all = [AccountOpened, MoneyDeposited]
