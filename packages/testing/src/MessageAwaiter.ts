/**
 * Waits, in a test, until a message (an event) was appended through the `EventStore` — for flows where one step
 * appends in the background (a receptor, a forked fiber) and the test must go on once it did.
 *
 * ```ts
 * const layer = MessageAwaiter.layer.pipe(Layer.provideMerge(eventStoreLayer))
 * const paid = yield* MessageAwaiter.awaitMessage("OrderPaid", { where: (e) => e.streamId === orderId })
 * ```
 *
 * {@link layer} decorates the `EventStore` in context: appends through it are recorded (also those before the
 * wait started), and a wait answers with the first matching envelope. On timeout: `AwaiterTimeoutError`, naming
 * the awaited type and the types seen so far. In-process only: appends by other processes are not seen (for
 * those, wait on their effect with `MultiHostPerspectiveAwaiter`).
 *
 * @since 0.2.0
 */
import { type Envelope, type EventDefinition, EventStore } from "@whizbang/core"
import { Context, Duration, Effect, Layer } from "effect"
import type { AwaiterTimeoutError } from "./AwaiterTimeoutError.js"
import { Observed } from "./internal/observed.js"

/**
 * Options of a wait.
 *
 * @category models
 * @since 0.2.0
 */
export interface AwaitOptions {
  /** Only envelopes for which this is true. */
  readonly where?: ((envelope: Envelope.Envelope) => boolean) | undefined
  /** Default 5 s. */
  readonly timeout?: Duration.Input | undefined
}

/**
 * The awaiter's operations.
 *
 * @category models
 * @since 0.2.0
 */
export interface MessageAwaiterShape {
  /** The first appended envelope of the type (and `where`), recorded before or during the wait. */
  readonly awaitMessage: (
    eventType: string | EventDefinition.Any,
    options?: AwaitOptions
  ) => Effect.Effect<Envelope.Envelope, AwaiterTimeoutError>
  /** Every envelope appended so far, in append order. */
  readonly seen: Effect.Effect<ReadonlyArray<Envelope.Envelope>>
}

/**
 * The awaiter service.
 *
 * @category services
 * @since 0.2.0
 */
export class MessageAwaiter extends Context.Service<MessageAwaiter, MessageAwaiterShape>()("@whizbang/testing/MessageAwaiter") {}

/**
 * The awaiter, and the `EventStore` in context decorated to record its appends.
 *
 * @category layers
 * @since 0.2.0
 */
export const layer: Layer.Layer<MessageAwaiter | EventStore.EventStore, never, EventStore.EventStore> = Layer.effectContext(
  Effect.gen(function* () {
    const store = yield* EventStore.EventStore
    const observed = new Observed<Envelope.Envelope>()
    const recording = EventStore.EventStore.of({
      ...store,
      append: (streamId, events, options) =>
        Effect.tap(store.append(streamId, events, options), (result) => Effect.sync(() => result.events.forEach((e) => observed.record(e))))
    })
    const awaiter = MessageAwaiter.of({
      awaitMessage: (eventType, options) => {
        const type = typeof eventType === "string" ? eventType : eventType.type
        const where = options?.where ?? (() => true)
        return Effect.suspend(() =>
          observed.awaitFirst(
            (e) => e.eventType === type && where(e),
            options?.timeout ?? Duration.seconds(5),
            "MessageAwaiter",
            () =>
              `a ${JSON.stringify(type)} message${options?.where === undefined ? "" : " matching `where`"} (seen: ${
                [...new Set(observed.items.map((e) => e.eventType))].join(", ") || "none"
              })`
          )
        )
      },
      seen: Effect.sync(() => observed.items.slice())
    })
    return Context.make(MessageAwaiter, awaiter).pipe(Context.add(EventStore.EventStore, recording))
  })
)

/**
 * {@link MessageAwaiterShape.awaitMessage} with the awaiter in context.
 *
 * @category waiting
 * @since 0.2.0
 */
export const awaitMessage = (
  eventType: string | EventDefinition.Any,
  options?: AwaitOptions
): Effect.Effect<Envelope.Envelope, AwaiterTimeoutError, MessageAwaiter> =>
  Effect.flatMap(MessageAwaiter, (awaiter) => awaiter.awaitMessage(eventType, options))
