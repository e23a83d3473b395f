/**
 * The order's write side: commands are decided against the order's own event stream, never against a read model
 * (which may lag), and appended with the stream version they were decided on. A command racing another on the same
 * order (an item added while the order is being paid) then fails with `WrongExpectedVersion` instead of landing on
 * a state it never saw: an order, once paid, takes no more items, and the amount charged is the total of exactly
 * the items the order holds.
 */
import { Data, Effect } from "effect"
import { type Envelope, EventStore } from "whizbang"
import { ItemAdded, OrderCreated, OrderPaid } from "./domain.js"

/** What a command needs to know of an order: folded from its events. */
export interface OrderState {
  readonly customerId: string
  readonly total: number
  readonly paid: boolean
  /** The stream version the state was folded to: the append's `expectedVersion`. */
  readonly version: number
}

/** A command the order's state refuses. */
export class OrderRejected extends Data.TaggedError("OrderRejected")<{
  readonly reason: "NotFound" | "AlreadyPaid"
  readonly message: string
}> {}

const evolve = (state: OrderState | undefined, event: Envelope.Envelope): OrderState | undefined => {
  const version = event.streamVersion
  if (OrderCreated.is(event)) return { customerId: event.payload.customerId, total: 0, paid: false, version }
  if (state === undefined) return undefined
  if (ItemAdded.is(event)) return { ...state, total: state.total + event.payload.quantity * event.payload.unitPrice, version }
  if (OrderPaid.is(event)) return { ...state, paid: true, version }
  return { ...state, version }
}

/** Reads the order's stream and folds it; `NotFound` when it has no `OrderCreated`. */
export const load = (orderId: string) =>
  Effect.gen(function* () {
    const store = yield* EventStore.EventStore
    const events = yield* store.readStream(orderId)
    const state = events.reduce(evolve, undefined)
    if (state === undefined) return yield* new OrderRejected({ reason: "NotFound", message: "no such order" })
    return state
  })

/** An open order: the state to decide on, or `AlreadyPaid`. */
export const loadOpen = (orderId: string) =>
  Effect.flatMap(load(orderId), (state) =>
    state.paid ? Effect.fail(new OrderRejected({ reason: "AlreadyPaid", message: "the order is already paid" })) : Effect.succeed(state)
  )
