/**
 * The operations page of a service schema: perspectives with lag and applied events/s (sparklines), versions with
 * build progress, rate and ETA, streams that wait and why, failed cursors, dead letters with payload and error,
 * instances and stream locks — live in the browser through server-sent events, with retry, discard, cutover and
 * rollback behind a token. `whizbang dashboard` runs it; a service can serve it too.
 *
 * **How it stays cheap**: one snapshot computation (the operations `whizbang status`, `dead-letters list` and
 * `failed` run; see {@link DashboardSnapshot}) is shared by every open page. It runs when `wh_work` or `wh_processed`
 * notifies, at most once per `refreshInterval`, and once per `slowRefreshInterval` without notifications (lag in
 * seconds and heartbeats age without them). Applied events/s come from the completions' notifications: no statement.
 *
 * **Security model**: read-only unless `allowActions`; then every action needs the token (given or generated, 32
 * random bytes), compared in constant time, sent in the confirmation form or a header — never a cookie, so another
 * site cannot act through a visitor's browser. Every action attempt is logged (client address and user agent, what,
 * when, outcome) and listed on the page. Listens on 127.0.0.1 by default. Every string from the database is
 * HTML-escaped, and the Content-Security-Policy runs only the page's own script.
 *
 * **Tenants**: the page shows the schema of the `PgClient` it runs with (`whizbang dashboard --tenant <id>`: that
 * tenant's). With `tenants`, `/tenants` lists every tenant of the catalog with its pending work, lag and dead letters
 * (the worst `top` by lag, read in one statement per 100 tenants, when the page is opened).
 *
 * @since 0.4.0
 */
import * as Http from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { PgClient } from "@whizbang/postgres"
import { Context, type Duration, Effect, Layer, type Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { type DashboardError, DashboardError as Err, ListenFailed } from "./DashboardError.js"
import * as Hub from "./internal/hub.js"
import * as Live from "./internal/live.js"
import { decode } from "./internal/options.js"
import * as Routes from "./internal/routes.js"

/**
 * @category models
 * @since 0.4.0
 */
export interface Options {
  /** Default `127.0.0.1` (this machine only). */
  readonly host?: string | undefined
  /** Default 0: any free port (see {@link Running.url}). */
  readonly port?: number | undefined
  /** Serve under this path (`/ops/whizbang`) behind a proxy that forwards it unchanged; default none. */
  readonly basePath?: string | undefined
  /** Allow retry, discard, cutover and rollback with the token; default false (read-only). */
  readonly allowActions?: boolean | undefined
  /** The actions token (at least 16 characters); default a generated one when actions are allowed. */
  readonly token?: string | undefined
  /** Recompute at most this often when notified; default 2 seconds. */
  readonly refreshInterval?: Duration.Input | undefined
  /** Recompute at least this often; default 10 seconds. */
  readonly slowRefreshInterval?: Duration.Input | undefined
  /** Heartbeat age after which an instance counts as dead; default 30 seconds. */
  readonly deadInstanceAfter?: Duration.Input | undefined
  /** Pending this long without progress counts as stuck; default 30 seconds. */
  readonly stuckAfter?: Duration.Input | undefined
  /** Samples kept for the sparklines; default 60. */
  readonly historyPoints?: number | undefined
  /**
   * The service's tenant catalog (as configured in `Whizbang.layerTenants`): serves `/tenants`, every tenant with its
   * pending work, lag and dead letters (the worst `top` by lag, default 50, and totals). Default: no tenants page.
   */
  readonly tenants?: TenantsOptions | undefined
}

/**
 * @category models
 * @since 0.6.0
 */
export interface TenantsOptions {
  /** The service schema (the default tenant); default the client's schema. */
  readonly serviceSchema?: string | undefined
  /** The tenant schema prefix; default `tenant_`. */
  readonly prefix?: string | undefined
  /** The catalog's schema; default `<service schema>_tenants`. */
  readonly catalogSchema?: string | undefined
  /** Tenants listed (the worst by lag); default 50. */
  readonly top?: number | undefined
}

/**
 * @category models
 * @since 0.4.0
 */
export interface Running {
  /** The page's URL (`http://127.0.0.1:41234/`, with the base path). */
  readonly url: string
  readonly port: number
  /** The actions token when actions are allowed. */
  readonly token: string | undefined
  /** The token was generated (print it: nobody else knows it). */
  readonly tokenGenerated: boolean
}

/**
 * Starts the page for the client's schema; it serves until the scope closes.
 *
 * @category constructors
 * @since 0.4.0
 */
export const serve = (options: Options = {}): Effect.Effect<Running, DashboardError, PgClient.PgClient | Scope.Scope> =>
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    const decoded = yield* decode(options, client.schema)
    const hub = yield* Hub.make(decoded, Live.render(decoded))
    const server = HttpRouter.serve(Routes.layer({ options: decoded, hub, client }), { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => Http.createServer(), { host: decoded.host, port: decoded.port }))
    )
    const context = yield* Layer.build(server).pipe(
      Effect.mapError(
        (cause) =>
          new Err({
            reason: new ListenFailed({ host: decoded.host, port: decoded.port }),
            message: `cannot listen on ${decoded.host}:${decoded.port}: ${cause.message}`
          })
      )
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    const port = address._tag === "UnixPathAddress" ? 0 : address.port
    const host = decoded.host.includes(":") ? `[${decoded.host}]` : decoded.host
    return {
      url: `http://${host}:${port}${decoded.basePath}/`,
      port,
      token: decoded.token,
      tokenGenerated: decoded.tokenGenerated
    }
  })
