/**
 * Event definitions: a type name, an Effect Schema for the payload, and how to find the stream id in a payload.
 *
 * ```ts
 * const OrderPlaced = EventDefinition.make("OrderPlaced", {
 *   payload: Schema.Struct({ orderId: Schema.String, total: Schema.Number }),
 *   streamId: (payload) => payload.orderId
 * })
 * yield* store.append(orderId, [OrderPlaced.make({ orderId, total: 10 })], { expectedVersion: 0 })
 * ```
 *
 * @since 0.1.0
 */
import type { Schema } from "effect"
import type { Envelope } from "./Envelope.js"

/**
 * An event not yet stored: a type and a payload (decoded form).
 *
 * @category models
 * @since 0.1.0
 */
export interface NewEvent<Type extends string = string, Payload = unknown> {
  readonly type: Type
  readonly payload: Payload
}

/**
 * A defined event type.
 *
 * @category models
 * @since 0.1.0
 */
export interface EventDefinition<Type extends string = string, S extends Schema.Top = Schema.Top> {
  readonly type: Type
  readonly payload: S
  /** Finds the stream an event of this type belongs to. */
  // Method syntax on purpose: it keeps definitions with specific payloads assignable to `Any`.
  streamId(payload: S["Type"]): string
  /** Makes a {@link NewEvent} of this type. */
  make(payload: S["Type"]): NewEvent<Type, S["Type"]>
  /**
   * Whether a stored envelope is of this type, narrowing its payload: `if (OrderPaid.is(e)) e.payload.amount`.
   * Stores decode payloads with the registry's schema of their type when they read them, so the type names the
   * payload's shape. Use it to fold a stream on the write side (deciding a command from `readStream`).
   *
   * @since 0.2.0
   */
  is(envelope: Envelope): envelope is Envelope<S["Type"], Type>
}

/**
 * Any event definition, whatever its payload.
 *
 * @category models
 * @since 0.1.0
 */
export type Any = EventDefinition<string, Schema.Top>

/**
 * The stored envelope type of a definition.
 *
 * @category models
 * @since 0.1.0
 */
export type PayloadOf<D> = D extends EventDefinition<string, infer S> ? S["Type"] : never

/**
 * Defines an event type. The name must be 1-200 printable characters with no surrounding spaces; it is stored in
 * `wh_events.event_type` and used to route work to perspectives.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <const Type extends string, S extends Schema.Top>(
  type: Type,
  options: { readonly payload: S; readonly streamId: (payload: S["Type"]) => string }
): EventDefinition<Type, S> => ({
  type,
  payload: options.payload,
  streamId: options.streamId,
  make: (payload) => ({ type, payload }),
  is: (envelope): envelope is Envelope<S["Type"], Type> => envelope.eventType === type
})
