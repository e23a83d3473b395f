/**
 * The NotificationListener port: wake-ups telling workers that new work may be waiting.
 *
 * In Postgres these come from LISTEN/NOTIFY on a dedicated connection. A wake-up is only a hint: workers
 * still poll on a safety-net interval, so a missed or coalesced wake-up delays work but never loses it.
 * That is why the in-memory listener may drop the oldest wake-ups when a subscriber is slow (a sliding buffer).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, PubSub, Stream } from "effect"

/**
 * One wake-up; `category` says which kind of work (e.g. `"perspective"`).
 *
 * @category models
 * @since 0.1.0
 */
export interface WakeUp {
  readonly category: string
}

/**
 * The listener's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  /** Every subscriber (each run of the stream) sees the wake-ups published after it subscribed. */
  readonly wakeUps: Stream.Stream<WakeUp>
  /**
   * Whether the first wake-up of every subscription says "listening now": every notification sent from then on
   * reaches the subscriber (the Postgres listener's LISTEN took effect). A worker runs its first claim after it, so
   * that wake-up is not a second claim right behind the first. Absent: the first wake-up is an ordinary one.
   *
   * @since 0.7.0
   */
  readonly confirmsListening?: boolean
}

/**
 * The listener as a service.
 *
 * @category services
 * @since 0.1.0
 */
export class NotificationListener extends Context.Service<NotificationListener, Shape>()("@whizbang/core/NotificationListener") {}

/**
 * Publishes wake-ups to the in-memory listener.
 *
 * @category services
 * @since 0.1.0
 */
export class Memory extends Context.Service<
  Memory,
  {
    readonly notify: (category?: string) => Effect.Effect<void>
  }
>()("@whizbang/core/NotificationListener/Memory") {}

/**
 * Provides an in-memory {@link NotificationListener} and the {@link Memory} publisher.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<NotificationListener | Memory> = Layer.effectContext(
  Effect.gen(function* () {
    const pubsub = yield* PubSub.sliding<WakeUp>(64)
    return Context.make(NotificationListener, NotificationListener.of({ wakeUps: Stream.fromPubSub(pubsub) })).pipe(
      Context.add(Memory, Memory.of({ notify: (category = "perspective") => Effect.asVoid(PubSub.publish(pubsub, { category })) }))
    )
  })
)
