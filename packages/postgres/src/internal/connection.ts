// One checked-out pg client and the statements in flight on it. An interrupted statement still running after a
// short grace is cancelled on the server (the protocol's cancel request, on a socket of its own, so a full pool
// cannot block it and no session is opened for it), and whoever sends the next statement or releases the client first waits for `settled`, so a late
// cancel can never hit a statement that was not the interrupted one.
import { Effect } from "effect"
import pg from "pg"
import { fromCause, type PostgresError } from "../PostgresError.js"
import { encodeParam } from "./arrayLiteral.js"
import * as FairCheckout from "./fairCheckout.js"

export interface Connection {
  readonly client: pg.PoolClient
  readonly pool: pg.Pool
  /** The schema whose turn it was checked out in (`fairCheckout.ts`). */
  readonly schema: string
  settled: Promise<void>
}

const noop = () => undefined

// pg reports errors of an idle checked-out client as an 'error' event; without a listener Node would crash.
const onClientError = noop

/** The parts of pg's client a cancel request needs, which its type declarations leave out. */
interface Cancellable {
  readonly processID: number | null
  readonly secretKey: number | null
  /** Not the `activeQuery` getter: pg 8.23 prints a deprecation warning on every read of it. */
  _getActiveQuery?(): unknown
}
interface Canceller {
  readonly host: string
  readonly port: number
  readonly connection: {
    connect(portOrPath: number | string, host?: string): void
    cancel(processID: number, secretKey: number): void
    on(event: "connect" | "end" | "error", listener: () => void): void
  }
}

/**
 * Cancels the statement running on `target` with the protocol's cancel request (what psql sends on Ctrl-C): a
 * socket of its own to the server carrying the backend's id and secret key, closed by the server once read. The
 * server opens no session for it, so it never counts against `max_connections` nor shows in `pg_stat_activity`
 * (`pg_cancel_backend` over a new connection did: one session beyond the pools, seen in bench t). Sent on an unopened
 * client's connection as pg's own `Client#cancel` does, without the deprecated `activeQuery` getter that method reads
 * (a warning on the user's stderr). Resolves when the server closed the socket, on an error, or after 5 s; the caller
 * waits for the statement itself anyway.
 */
const cancelBackend = (config: pg.ClientConfig, target: pg.PoolClient): Promise<void> => {
  const running = target as unknown as Cancellable
  const idle = typeof running._getActiveQuery === "function" && (running._getActiveQuery() ?? undefined) === undefined
  if (idle || running.processID === null || running.secretKey === null) return Promise.resolve()
  const { processID, secretKey } = running
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 5_000)
    const done = () => {
      clearTimeout(timer)
      resolve()
    }
    const canceller = new pg.Client(config) as unknown as Canceller
    const con = canceller.connection
    // `on`, not `once`: a second socket error without a listener would crash the process.
    con.on("end", done)
    con.on("error", done)
    con.on("connect", () => con.cancel(processID, secretKey))
    try {
      if (canceller.host.startsWith("/")) con.connect(`${canceller.host}/.s.PGSQL.${canceller.port}`)
      else con.connect(canceller.port, canceller.host)
    } catch {
      done()
    }
  })
}

// `Effect.callback` with a one-parameter registration: no AbortController per statement (a tryPromise creates one,
// about 2 % of a busy process's CPU with its listener); the returned cleanup runs only on interruption.
const connect = (pool: pg.Pool, schema: string): Effect.Effect<Connection, PostgresError> =>
  Effect.callback<Connection, PostgresError>((resume) => {
    const connecting = pool.connect()
    connecting.then(
      (client) => {
        client.on("error", onClientError)
        resume(Effect.succeed({ client, pool, schema, settled: Promise.resolve() }))
      },
      (cause) => resume(Effect.fail(fromCause(cause)))
    )
    // Interrupted while connecting: hand the client back as soon as it arrives.
    return Effect.sync(() => void connecting.then((client) => client.release(), noop))
  })

/**
 * A connection of `pool` for a statement of `schema`, checked out when the schema's turn comes
 * (`fairCheckout.ts`: the schemas sharing the pool are served in turn, each holding one connection at a time while
 * others use it).
 */
export const acquire = (pool: pg.Pool, schema: string): Effect.Effect<Connection, PostgresError> =>
  Effect.andThen(
    Effect.mapError(FairCheckout.take(pool, schema), fromCause),
    Effect.onExit(connect(pool, schema), (exit) =>
      exit._tag === "Success" ? Effect.void : Effect.sync(() => FairCheckout.give(pool, schema))
    )
  )

export const release = (conn: Connection, destroy: boolean): Effect.Effect<void> =>
  Effect.promise(() =>
    conn.settled.then(() => {
      conn.client.off("error", onClientError)
      conn.client.release(destroy ? true : undefined)
      FairCheckout.give(conn.pool, conn.schema)
    })
  )

export const awaitSettled = (conn: Connection): Effect.Effect<void> => Effect.promise(() => conn.settled)

/** How long an interrupted statement may go on before it is cancelled on the server. */
export const cancelGraceMillis = 500

export const run = <Row>(
  conn: Connection,
  cancelConfig: pg.ClientConfig,
  sql: string,
  params?: ReadonlyArray<unknown>,
  name?: string
): Effect.Effect<ReadonlyArray<Row>, PostgresError> =>
  Effect.callback<ReadonlyArray<Row>, PostgresError>((resume) => {
    let running: Promise<pg.QueryResult>
    try {
      // No values -> simple query protocol (multi-statement text and $$ bodies are allowed); with values every
      // one of them is a bound parameter; with a name, a prepared statement (parsed once per connection).
      running =
        params === undefined || params.length === 0
          ? conn.client.query(sql)
          : name === undefined
            ? conn.client.query(sql, params.map(encodeParam))
            : conn.client.query({ name, text: sql, values: params.map(encodeParam) })
    } catch (cause) {
      resume(Effect.fail(fromCause(cause, sql)))
      return
    }
    conn.settled = running.then(noop, noop)
    running.then(
      (result) => resume(Effect.succeed(result.rows as ReadonlyArray<Row>)),
      (cause) => resume(Effect.fail(fromCause(cause, sql)))
    )
    // Interrupted: a statement that ends within `cancelGraceMillis` is let end (most do: a cancel costs a socket
    // and a short-lived server process); one still running then is cancelled on the server. The next statement or
    // the release waits for either.
    return Effect.sync(() => {
      let ended = false
      const ending = running.then(
        () => void (ended = true),
        () => void (ended = true)
      )
      let timer: ReturnType<typeof setTimeout> | undefined
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, cancelGraceMillis)
      })
      conn.settled = Promise.race([ending, grace]).then(() => {
        clearTimeout(timer)
        return ended ? undefined : Promise.allSettled([running, cancelBackend(cancelConfig, conn.client)]).then(noop)
      })
    })
  })
