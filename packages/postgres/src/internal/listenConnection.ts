/**
 * The LISTEN side of a `PgClient` (`PgClient.listen(channel)`): ONE connection, opened outside the pool by the first
 * subscriber and ended when the last one leaves, shared by every channel and every subscriber (a `Whizbang.layer`
 * process LISTENs on `wh_work` and `wh_processed` through it). Each subscriber is a `Stream` with a queue of its own.
 *
 * - Only this schema's notifications are delivered (a channel's name is shared by every schema of a database; the
 *   payload names the schema). A payload may carry detail after the schema and a newline (`<schema>\n<detail>`):
 *   the element is that detail, or `undefined` for a bare schema.
 * - `undefined` also arrives once the subscriber's channel is LISTENed (its first element: "you are listening now")
 *   and after every reconnect, since notifications sent while disconnected are lost: a subscriber treats it as
 *   "something may have changed".
 * - A lost connection is re-opened with capped exponential backoff (100 ms doubling to 5 s) and LISTENs again on
 *   every channel that has subscribers; the outage is one warning and one "recovered" line (`OutageLog`).
 *
 * The one place pg's event emitter meets Effect is `deliver` (`Queue.offerUnsafe` into the subscribers' queues) and
 * the connection's `error`/`end` events (`Deferred.doneUnsafe`); nothing runs an effect from a callback.
 *
 * @internal
 */
import { OutageLog } from "@whizbang/core"
import { Deferred, Duration, Effect, Exit, Queue, RcRef, Schedule, type Scope, Stream } from "effect"
import type pg from "pg"
import * as Identifier from "./identifier.js"
import type { PostgresError } from "../PostgresError.js"

/** What `PgClient.listen` is. @internal */
export type Listen = (channel: string) => Stream.Stream<string | undefined>

// Channels were checked to be plain identifiers (`listen`), so they need no quoting.
const listenTo = (connection: pg.Client, channels: ReadonlyArray<string>) =>
  Effect.tryPromise(() => connection.query(channels.map((channel) => `LISTEN ${channel}`).join("; ")))

/** The subscriptions and the connection that serves them, for as long as `Scope` lives. @internal */
export const make = (connect: Effect.Effect<pg.Client, PostgresError>, schema: string): Effect.Effect<Listen, never, Scope.Scope> =>
  Effect.gen(function* () {
    const subscribers = new Map<string, Set<Queue.Enqueue<string | undefined>>>()
    /** The connection, from its connect until it breaks: a channel subscribed meanwhile LISTENs on it itself. */
    let current: pg.Client | undefined
    const withDetail = `${schema}\n`
    const deliver = (message: pg.Notification) => {
      const payload = message.payload
      if (payload === undefined) return
      const detail = payload === schema ? undefined : payload.startsWith(withDetail) ? payload.slice(withDetail.length) : null
      if (detail === null) return
      for (const queue of subscribers.get(message.channel) ?? []) Queue.offerUnsafe(queue, detail)
    }
    const listening = (channels: Iterable<string>) => {
      for (const channel of channels) for (const queue of subscribers.get(channel) ?? []) Queue.offerUnsafe(queue, undefined)
    }

    const outages = yield* OutageLog.make("LISTEN connection")
    /** Holds one connection until it breaks; fails when it does, so the loop reconnects. */
    const connection = Effect.gen(function* () {
      const client = yield* Effect.acquireRelease(connect, (c) => Effect.promise(() => c.end().catch(() => undefined)))
      const broken = Deferred.makeUnsafe<never, Error>()
      client.on("error", (error) => Deferred.doneUnsafe(broken, Exit.fail(error)))
      client.on("end", () => Deferred.doneUnsafe(broken, Exit.fail(new Error("LISTEN connection ended"))))
      client.on("notification", deliver)
      current = client
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          if (current === client) current = undefined
        })
      )
      // The channels subscribed until now; a channel subscribed from now on LISTENs on `current` itself.
      const channels = [...subscribers.keys()]
      if (channels.length > 0) yield* listenTo(client, channels)
      yield* outages.succeeded
      listening(channels)
      return yield* Deferred.await(broken)
    }).pipe(Effect.scoped)
    const reconnect = Schedule.min([Schedule.exponential(Duration.millis(100)), Schedule.spaced(Duration.seconds(5))])
    const session = yield* RcRef.make({
      acquire: Effect.forkScoped(connection.pipe(Effect.tapCause(outages.failed), Effect.retry(reconnect)))
    })

    const add = (channel: string, queue: Queue.Enqueue<string | undefined>) => {
      const queues = subscribers.get(channel)
      if (queues === undefined) subscribers.set(channel, new Set([queue]))
      else queues.add(queue)
    }
    const remove = (channel: string, queue: Queue.Enqueue<string | undefined>) => {
      const queues = subscribers.get(channel)
      queues?.delete(queue)
      if (queues?.size === 0) subscribers.delete(channel)
    }

    return (channel) =>
      Identifier.isValid(channel)
        ? Stream.callback<string | undefined>((queue) =>
            Effect.gen(function* () {
              // Registered before the connection opens, so the `undefined` after its LISTEN reaches this subscriber.
              yield* Effect.acquireRelease(
                Effect.sync(() => add(channel, queue)),
                () => Effect.sync(() => remove(channel, queue))
              )
              yield* RcRef.get(session)
              const client = current
              if (client === undefined) return
              // Connected already: LISTEN (a no-op when another subscriber has the channel) and say so. On failure the
              // connection is broken: the reconnect LISTENs again and says so.
              const listened = yield* Effect.exit(listenTo(client, [channel]))
              if (Exit.isSuccess(listened)) Queue.offerUnsafe(queue, undefined)
            })
          )
        : Stream.die(new Error(`invalid LISTEN channel name ${JSON.stringify(channel)}`))
  })
