/**
 * The LISTEN side of a `PgClient` (`PgClient.listen(channel)`): ONE connection, opened outside the pool by the first
 * subscriber and ended when the last one leaves, shared by every channel and every subscriber (a `Whizbang.layer`
 * process LISTENs on `wh_work` and `wh_processed` through it). Each subscriber is a `Stream` with a queue of its own.
 *
 * - A subscriber names its schema and gets only that schema's notifications (a channel's name is shared by every
 *   schema of a database; the payload names the schema). A payload may carry detail after the schema and a newline
 *   (`<schema>\n<detail>`): the element is that detail, or `undefined` for a bare schema. A subscriber of no schema
 *   gets every payload whole (the tenant fleet). Views of one client bound to many schemas share the connection.
 * - `undefined` also arrives once the subscriber's channel is LISTENed (its first element: "you are listening now")
 *   and after every reconnect, since notifications sent while disconnected are lost: a subscriber treats it as
 *   "something may have changed".
 * - A lost connection is re-opened with capped exponential backoff (100 ms doubling to 5 s) and LISTENs again on
 *   every channel that has subscribers; the outage is one warning and one "recovered" line (`OutageLog`).
 *
 * - The connection's server session (`Session`: backend pid, its start, the server's start) is published while it
 *   is open, so the instance registry can tell other instances that its process is alive (`PgInstanceRegistry`).
 *
 * The one place pg's event emitter meets Effect is `deliver` (`Queue.offerUnsafe` into the subscribers' queues) and
 * the connection's `error`/`end` events (`Deferred.doneUnsafe`); nothing runs an effect from a callback.
 *
 * @internal
 */
import { OutageLog } from "@whizbang/core/internal"
import { Deferred, Duration, Effect, Exit, Queue, RcRef, Schedule, type Scope, Stream, SubscriptionRef } from "effect"
import type pg from "pg"
import { epochMicros } from "./epochMicros.js"
import * as Identifier from "./identifier.js"
import type { PostgresError } from "../PostgresError.js"

/** What `PgClient.listen` is. @internal */
export type Listen = (channel: string, schema: string | undefined) => Stream.Stream<string | undefined>

/**
 * A server session: its backend's pid and start, and the start of the server that runs it (microseconds since the
 * epoch, as text: exact, and the same whatever a session's `TimeZone`). @internal
 */
export interface Session {
  readonly pid: number
  readonly backendStart: string
  readonly serverStart: string
}

/** The LISTEN side of a client and of the clients that share its connection. @internal */
export interface ListenSide {
  readonly listen: Listen
  /** The connection's session while it is open, `undefined` while there is none. */
  readonly session: SubscriptionRef.SubscriptionRef<Session | undefined>
}

const sessionQuery = `SELECT pg_backend_pid() AS pid,
  ${epochMicros("(SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())")} AS backend_start,
  ${epochMicros("pg_postmaster_start_time()")} AS server_start`

/** The connection's session; `undefined` when the server does not say (a proxy that hides it). */
const sessionOf = (connection: pg.Client) =>
  Effect.tryPromise(() => connection.query<{ pid: number; backend_start: string | null; server_start: string | null }>(sessionQuery)).pipe(
    Effect.map(({ rows: [row] }): Session | undefined =>
      row?.backend_start == null || row.server_start == null
        ? undefined
        : { pid: row.pid, backendStart: row.backend_start, serverStart: row.server_start }
    ),
    Effect.orElseSucceed(() => undefined)
  )

/** One subscriber: its queue, and the schema whose payloads it takes (`undefined`: every payload, whole). */
interface Subscriber {
  readonly queue: Queue.Enqueue<string | undefined>
  readonly schema: string | undefined
}

/** What a subscriber of `schema` receives of `payload`: the detail, `undefined` for a bare schema, `null`: not its. */
const detailFor = (schema: string | undefined, payload: string): string | undefined | null => {
  if (schema === undefined) return payload
  if (payload === schema) return undefined
  return payload.length > schema.length && payload.startsWith(schema) && payload[schema.length] === "\n"
    ? payload.slice(schema.length + 1)
    : null
}

/** A connection's channels LISTENed (or being LISTENed) and its LISTEN statements, one at a time. */
interface Listening {
  readonly channels: Set<string>
  done: Promise<unknown>
}
const listenings = new WeakMap<pg.Client, Listening>()

// Channels were checked to be plain identifiers (`listen`), so they need no quoting. A channel LISTENed already on
// the connection sends nothing (a process serving many tenants subscribes to the same two channels once per tenant):
// it waits for the LISTENs in flight, so "you are listening now" is true when it returns. Statements on the
// connection run one after the other (pg runs one query at a time per client; queuing a second is deprecated).
const listenTo = (connection: pg.Client, channels: ReadonlyArray<string>) =>
  Effect.tryPromise(() => {
    let state = listenings.get(connection)
    if (state === undefined) {
      state = { channels: new Set(), done: Promise.resolve() }
      listenings.set(connection, state)
    }
    const fresh = channels.filter((channel) => !state.channels.has(channel))
    if (fresh.length === 0) return state.done
    for (const channel of fresh) state.channels.add(channel)
    const run = state.done.then(() => connection.query(fresh.map((channel) => `LISTEN ${channel}`).join("; ")))
    state.done = run.catch(() => undefined)
    return run
  })

/** The subscriptions and the connection that serves them, for as long as `Scope` lives. @internal */
export const make = (connect: Effect.Effect<pg.Client, PostgresError>): Effect.Effect<ListenSide, never, Scope.Scope> =>
  Effect.gen(function* () {
    const published = yield* SubscriptionRef.make<Session | undefined>(undefined)
    const subscribers = new Map<string, Set<Subscriber>>()
    /** The connection, from its connect until it breaks: a channel subscribed meanwhile LISTENs on it itself. */
    let current: pg.Client | undefined
    const deliver = (message: pg.Notification) => {
      const payload = message.payload
      if (payload === undefined) return
      for (const subscriber of subscribers.get(message.channel) ?? []) {
        const detail = detailFor(subscriber.schema, payload)
        if (detail !== null) Queue.offerUnsafe(subscriber.queue, detail)
      }
    }
    const listening = (channels: Iterable<string>) => {
      for (const channel of channels)
        for (const subscriber of subscribers.get(channel) ?? []) Queue.offerUnsafe(subscriber.queue, undefined)
    }

    const outages = yield* OutageLog.make("LISTEN connection")
    /** Holds one connection until it breaks; fails when it does, so the loop reconnects. */
    const connection = Effect.gen(function* () {
      const client = yield* Effect.acquireRelease(connect, (c) => Effect.promise(() => c.end().catch(() => undefined)))
      const broken = Deferred.makeUnsafe<never, Error>()
      client.on("error", (error) => Deferred.doneUnsafe(broken, Exit.fail(error)))
      client.on("end", () => Deferred.doneUnsafe(broken, Exit.fail(new Error("LISTEN connection ended"))))
      client.on("notification", deliver)
      // Asked before the connection is `current`: a subscriber's LISTEN never queues behind it.
      const session = yield* sessionOf(client)
      current = client
      yield* SubscriptionRef.set(published, session)
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() => {
          if (current !== client) return Effect.void
          current = undefined
          return SubscriptionRef.set(published, undefined)
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

    const add = (channel: string, subscriber: Subscriber) => {
      const set = subscribers.get(channel)
      if (set === undefined) subscribers.set(channel, new Set([subscriber]))
      else set.add(subscriber)
    }
    const remove = (channel: string, subscriber: Subscriber) => {
      const set = subscribers.get(channel)
      set?.delete(subscriber)
      if (set?.size === 0) subscribers.delete(channel)
    }

    const listen: Listen = (channel, schema) =>
      Identifier.isValid(channel)
        ? Stream.callback<string | undefined>((queue) =>
            Effect.gen(function* () {
              // Registered before the connection opens, so the `undefined` after its LISTEN reaches this subscriber.
              const subscriber: Subscriber = { queue, schema }
              yield* Effect.acquireRelease(
                Effect.sync(() => add(channel, subscriber)),
                () => Effect.sync(() => remove(channel, subscriber))
              )
              yield* RcRef.get(session)
              const client = current
              if (client === undefined) return
              // Connected already: LISTEN (nothing to send when another subscriber has the channel) and say so. On
              // failure the connection is broken: the reconnect LISTENs again and says so.
              const listened = yield* Effect.exit(listenTo(client, [channel]))
              if (Exit.isSuccess(listened)) Queue.offerUnsafe(queue, undefined)
            })
          )
        : Stream.die(new Error(`invalid LISTEN channel name ${JSON.stringify(channel)}`))
    return { listen, session: published }
  })
