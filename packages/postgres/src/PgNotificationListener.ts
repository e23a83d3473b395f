/**
 * LISTEN on the `wh_work` channel (fired by the `wh_notify_work` trigger when work rows are inserted): a wake-up for
 * every notification of this service's schema, through `PgClient.listen` (one connection, reconnected with capped
 * backoff; a wake-up after every reconnect, and the worker's safety-net poll covers any gap). Appends of this
 * process wake it directly, without waiting for their notification, which it then skips (`localWakeUps`).
 *
 * @since 0.1.0
 */
import { NotificationListener } from "@whizbang/core"
import { Effect, Layer, Queue, Stream } from "effect"
import * as LocalWakeUps from "./internal/localWakeUps.js"
import { PgClient } from "./PgClient.js"

/**
 * The channel the work trigger notifies.
 *
 * @category constants
 * @since 0.1.0
 */
export const channel = "wh_work"

const wakeUp: NotificationListener.WakeUp = { category: "perspective" }

/**
 * The listener as a layer. Its LISTEN opens with the first subscriber (a perspective worker) and ends with the last:
 * a process that only appends and reads (`Whizbang.layerWithoutWorker`, or a worker in another process) LISTENs on
 * nothing for it and receives none of the service's work notifications.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<NotificationListener.NotificationListener, never, PgClient> = Layer.effect(
  NotificationListener.NotificationListener,
  Effect.map(PgClient, (client) => {
    // This process's appends wake it at once (`LocalWakeUps.publish` is synchronous: it offers, never runs an effect).
    const local = Stream.callback<NotificationListener.WakeUp>(
      (queue) =>
        Effect.acquireRelease(
          Effect.sync(() => LocalWakeUps.subscribe((schema) => schema === client.schema && Queue.offerUnsafe(queue, wakeUp))),
          (unsubscribe) => Effect.sync(unsubscribe)
        ),
      { bufferSize: 1, strategy: "sliding" }
    )
    // ... and their notification names the process: skipped, every other process's acted on.
    const notified = client.listen(channel).pipe(
      Stream.filter((detail) => !LocalWakeUps.fromThisProcess(detail)),
      Stream.as(wakeUp)
    )
    // The LISTEN connection's first element for a subscriber says the channel is LISTENed for it (`PgClient.listen`).
    return NotificationListener.NotificationListener.of({ wakeUps: Stream.merge(local, notified), confirmsListening: true })
  })
)
