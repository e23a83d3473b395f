/**
 * LISTEN on one dedicated connection for the `wh_work` channel (fired by the `wh_notify_work` trigger when work
 * rows are inserted) and publish a wake-up for notifications of this service's schema.
 *
 * The connection is re-opened with capped exponential backoff (100 ms doubling to 5 s) when it dies; after
 * every (re)connect a wake-up is published, since notifications sent while disconnected are lost — the worker's
 * safety-net poll covers the gap as well.
 *
 * @since 0.1.0
 */
import { NotificationListener } from "@whizbang/core"
import { Duration, Effect, Layer, PubSub, Schedule, Stream } from "effect"
import type pg from "pg"
import { PgClient } from "./PgClient.js"

/**
 * The channel the work trigger notifies.
 *
 * @category constants
 * @since 0.1.0
 */
export const channel = "wh_work"

/** Holds one LISTEN connection until it breaks; fails when it does, so the caller reconnects. */
const listenOnce = (pool: pg.Pool, schema: string, publish: () => void) =>
  Effect.scoped(
    Effect.gen(function* () {
      const connection = yield* Effect.acquireRelease(
        Effect.tryPromise(() => pool.connect()),
        (c) => Effect.sync(() => c.release(true))
      )
      yield* Effect.tryPromise(() => connection.query(`LISTEN ${channel}`))
      publish()
      yield* Effect.callback<never, Error>((resume) => {
        const onNotification = (message: pg.Notification) => {
          if (message.payload === schema) publish()
        }
        const onBroken = (error?: Error) => resume(Effect.fail(error ?? new Error("LISTEN connection ended")))
        connection.on("notification", onNotification)
        connection.on("error", onBroken)
        connection.on("end", onBroken)
        return Effect.sync(() => {
          connection.off("notification", onNotification)
          connection.off("error", onBroken)
          connection.off("end", onBroken)
        })
      })
    })
  )

/**
 * The listener as a layer; its connection lives as long as the layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<NotificationListener.NotificationListener, never, PgClient> = Layer.effect(
  NotificationListener.NotificationListener,
  Effect.gen(function* () {
    const client = yield* PgClient
    const wakeUps = yield* PubSub.sliding<NotificationListener.WakeUp>(16)
    const publish = () => void Effect.runFork(PubSub.publish(wakeUps, { category: "perspective" }))
    const reconnect = Schedule.min([Schedule.exponential(Duration.millis(100)), Schedule.spaced(Duration.seconds(5))])
    yield* Effect.forkScoped(
      listenOnce(client.pool, client.schema, publish).pipe(
        Effect.tapError((error) => Effect.logWarning(`LISTEN ${channel} connection lost; reconnecting`, error)),
        Effect.retry(reconnect)
      )
    )
    return NotificationListener.NotificationListener.of({ wakeUps: Stream.fromPubSub(wakeUps) })
  })
)
