/**
 * A LISTEN on one dedicated connection opened by the `PgClient` outside its pool (so listeners never take the
 * pool's slots: with them in the pool, `maxConnections: 2` and two listeners left no connection for statements), kept open for the life of a scope: the
 * connection is re-opened with capped exponential backoff (100 ms doubling to 5 s) when it dies, and only
 * notifications whose payload is this client's schema are delivered (channel names are shared by every schema
 * of a database; the payload names the schema). A payload may carry detail after the schema and a newline
 * (`<schema>\n<detail>`); `onMessage` receives that detail, or `undefined` for a bare schema.
 *
 * `onMessage` also runs (with `undefined`) after every (re)connect, since notifications sent while disconnected
 * are lost: a listener should treat it as "something may have changed".
 *
 * @since 0.1.0
 */
import { OutageLog } from "@whizbang/core"
import { Duration, Effect, Schedule, type Scope } from "effect"
import type pg from "pg"
import { PgClient } from "./PgClient.js"
import * as Identifier from "./Identifier.js"

/** Holds one LISTEN connection until it breaks; fails when it does, so the caller reconnects. */
const listenOnce = (
  client: PgClient["Service"],
  channel: string,
  onMessage: (detail: string | undefined) => void,
  listening: Effect.Effect<void>
) =>
  Effect.scoped(
    Effect.gen(function* () {
      const connection = yield* Effect.acquireRelease(client.connect, (c) => Effect.promise(() => c.end().catch(() => undefined)))
      // Errors of the idle connection are handled by `onBroken` below; until then, keep Node from crashing.
      connection.on("error", () => undefined)
      // `channel` was checked to be a plain identifier (see `fork`), so it needs no quoting.
      yield* Effect.tryPromise(() => connection.query(`LISTEN ${channel}`))
      yield* listening
      onMessage(undefined)
      const withDetail = `${client.schema}\n`
      yield* Effect.callback<never, Error>((resume) => {
        const onNotification = (message: pg.Notification) => {
          if (message.channel !== channel || message.payload === undefined) return
          if (message.payload === client.schema) onMessage(undefined)
          else if (message.payload.startsWith(withDetail)) onMessage(message.payload.slice(withDetail.length))
        }
        const onBroken = (error?: Error) => resume(Effect.fail(error ?? new Error(`LISTEN ${channel} connection ended`)))
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
 * Forks the listening fiber into the current scope.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fork = (
  channel: string,
  onMessage: (detail: string | undefined) => void
): Effect.Effect<void, never, PgClient | Scope.Scope> =>
  Effect.gen(function* () {
    if (!Identifier.isValid(channel)) return yield* Effect.die(new Error(`invalid LISTEN channel name ${JSON.stringify(channel)}`))
    const client = yield* PgClient
    const reconnect = Schedule.min([Schedule.exponential(Duration.millis(100)), Schedule.spaced(Duration.seconds(5))])
    // The lost connection and the failed reconnects are one warning; the LISTEN that works again, one info line.
    const outages = yield* OutageLog.make(`LISTEN ${channel}`)
    yield* Effect.forkScoped(
      listenOnce(client, channel, onMessage, outages.succeeded).pipe(
        Effect.tapCause((cause) => outages.failed(cause)),
        Effect.retry(reconnect)
      )
    )
  })
