// What the routes answer with: a full page under the security headers, an operation's failure as a page, and the
// database an operation runs against.
import type { OperationError } from "@whizbang/cli"
import { PgClient } from "@whizbang/postgres"
import { Effect } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import type { Html } from "./html.js"
import type { Hub } from "./hub.js"
import * as Layout from "./layout.js"
import type { Decoded } from "./options.js"
import * as Pages from "./pages.js"

export interface Context {
  readonly options: Decoded
  readonly hub: Hub
  readonly client: PgClient.PgClient["Service"]
}

const securityHeaders = (nonce: string) => ({
  "content-security-policy": Layout.contentSecurityPolicy(nonce),
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store"
})

/** The request's path without its query. */
export const pathOf = (request: HttpServerRequest.HttpServerRequest) => new URL(request.url, "http://localhost").pathname

export const statusOf = (e: OperationError.OperationError): number => {
  switch (e.reason._tag) {
    case "NotFound":
    case "InvalidInput":
      return 404
    case "Refused":
      return 409
    case "TimedOut":
      return 504
    case "DatabaseFailure":
      return 503
  }
}

const frame = (ctx: Context, title: string) => ({
  title,
  basePath: ctx.options.basePath,
  schema: ctx.client.schema,
  actionsAllowed: ctx.options.token !== undefined,
  tenantsPage: ctx.options.tenants !== undefined,
  nonce: Layout.nonce()
})

export const page = (ctx: Context, title: string, body: Html, status = 200, live = false) => {
  const f = frame(ctx, title)
  return HttpServerResponse.text(Layout.document(f, body, { live }), {
    status,
    contentType: "text/html; charset=utf-8",
    headers: securityHeaders(f.nonce)
  })
}

export const withDb = <A>(ctx: Context, effect: Effect.Effect<A, OperationError.OperationError, PgClient.PgClient>) =>
  Effect.provideService(effect, PgClient.PgClient, ctx.client)

export const failure = (ctx: Context, title: string) => (e: OperationError.OperationError) =>
  Effect.succeed(
    e.reason._tag === "NotFound" || e.reason._tag === "InvalidInput"
      ? page(ctx, "not found", Pages.notFound(e.message, ctx.options.basePath), 404)
      : page(ctx, title, Pages.outcome(title, e.message, false, ctx.options.basePath), statusOf(e))
  )
