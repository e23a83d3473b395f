/**
 * What every group of the EventStore contract's tests shares: the events the suite appends, the registry its layers
 * are built with, and the test methods (`it`, `expect`) `EventStoreContract.run` hands each group.
 */
import type * as EffectVitest from "@effect/vitest"
import { EventDefinition, EventRegistry, type EventStore } from "@whizbang/core"
import { Schema } from "effect"

/**
 * The events the suite appends.
 *
 * @category constants
 * @since 0.1.0
 */
export const ItemAdded = EventDefinition.make("ItemAdded", {
  payload: Schema.Struct({ cartId: Schema.String, sku: Schema.String, quantity: Schema.Number }),
  streamId: (p) => p.cartId
})

/**
 * @category constants
 * @since 0.1.0
 */
export const CartCheckedOut = EventDefinition.make("CartCheckedOut", {
  payload: Schema.Struct({ cartId: Schema.String, at: Schema.DateTimeUtcFromString }),
  streamId: (p) => p.cartId
})

/**
 * An event with a free-form part, for payloads only storage can refuse (nesting depth).
 *
 * @category constants
 * @since 0.1.0
 */
export const NoteAdded = EventDefinition.make("NoteAdded", {
  payload: Schema.Struct({ cartId: Schema.String, note: Schema.Unknown }),
  streamId: (p) => p.cartId
})

/** Largest payload the suite's registry accepts, small so the "too large" case is cheap. */
export const maxPayloadBytes = 64 * 1024

/**
 * The registry the suite's layers are built with.
 *
 * @category constructors
 * @since 0.1.0
 */
export const registry = EventRegistry.make([ItemAdded, CartCheckedOut, NoteAdded], { maxPayloadBytes })

/** The test methods a group registers its tests with, in the layer of the store under test. */
export interface Suite {
  readonly it: EffectVitest.Vitest.MethodsNonLive<EventStore.EventStore>
  readonly expect: typeof EffectVitest.expect
}
