/**
 * LISTEN on the `wh_work` channel (fired by the `wh_notify_work` trigger when work rows are inserted) and publish
 * a wake-up for notifications of this service's schema, through `PgListener` (one connection, reconnected with
 * capped backoff; a wake-up after every reconnect, and the worker's safety-net poll covers any gap). Appends of
 * this process wake it directly, without waiting for their notification, which it then skips (`localWakeUps`).
 *
 * @since 0.1.0
 */
import { NotificationListener } from "@whizbang/core"
import { Effect, Layer, PubSub, Scope, Stream } from "effect"
import * as LocalWakeUps from "./internal/localWakeUps.js"
import { PgClient } from "./PgClient.js"
import * as PgListener from "./PgListener.js"

/**
 * The channel the work trigger notifies.
 *
 * @category constants
 * @since 0.1.0
 */
export const channel = "wh_work"

/**
 * The listener as a layer. Its connection is opened by the first subscriber (a perspective worker) and lives as long
 * as the layer: a process that only appends and reads (`Whizbang.layerWithoutWorker`, or a worker in another
 * process) holds no LISTEN connection and receives none of the service's work notifications.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<NotificationListener.NotificationListener, never, PgClient> = Layer.effect(
  NotificationListener.NotificationListener,
  Effect.gen(function* () {
    const wakeUps = yield* PubSub.sliding<NotificationListener.WakeUp>(16)
    const client = yield* PgClient
    const scope = yield* Effect.scope
    const wake = () => void Effect.runFork(PubSub.publish(wakeUps, { category: "perspective" }))
    const listen = yield* Effect.cached(
      Effect.gen(function* () {
        yield* Effect.acquireRelease(
          Effect.sync(() => LocalWakeUps.subscribe((schema) => schema === client.schema && wake())),
          (unsubscribe) => Effect.sync(unsubscribe)
        )
        // This process's appends woke it already (above); their notification names the process.
        yield* PgListener.fork(channel, (detail) => !LocalWakeUps.fromThisProcess(detail) && wake())
      }).pipe(Scope.provide(scope), Effect.provideService(PgClient, client))
    )
    return NotificationListener.NotificationListener.of({
      // Subscribed before the connection opens, so the wake-up that follows its LISTEN is not missed.
      wakeUps: Stream.unwrap(
        Effect.gen(function* () {
          const subscription = yield* PubSub.subscribe(wakeUps)
          yield* listen
          return Stream.fromSubscription(subscription)
        })
      )
    })
  })
)
