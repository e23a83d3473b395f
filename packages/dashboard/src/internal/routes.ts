// The routes, under the base path. Reads need nothing; an action's POST needs the server started with actions
// allowed, the token (form field `token`, header `x-whizbang-token` or `authorization: Bearer <token>`) and
// `confirm=yes` (the confirmation form sends it). Every POST is recorded, refused ones too.
import { DeadLetters, type OperationError, Tenants } from "@whizbang/cli"
import { PgClient, PgTenants } from "@whizbang/postgres"
import { Effect, Layer, Option, Stream, SubscriptionRef } from "effect"
import { Headers, HttpRouter, type HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import * as Actions from "./actions.js"
import type { Hub } from "./hub.js"
import { type Html, raw } from "./html.js"
import * as Layout from "./layout.js"
import type { Decoded } from "./options.js"
import * as Pages from "./pages.js"
import * as Token from "./token.js"

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
const pathOf = (request: HttpServerRequest.HttpServerRequest) => new URL(request.url, "http://localhost").pathname

const statusOf = (e: OperationError.OperationError): number => {
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

export const layer = (ctx: Context) => {
  const base = ctx.options.basePath
  const frame = (title: string) => ({
    title,
    basePath: base,
    schema: ctx.client.schema,
    actionsAllowed: ctx.options.token !== undefined,
    tenantsPage: ctx.options.tenants !== undefined,
    nonce: Layout.nonce()
  })
  const page = (title: string, body: Html, status = 200, live = false) => {
    const f = frame(title)
    return HttpServerResponse.text(Layout.document(f, body, { live }), {
      status,
      contentType: "text/html; charset=utf-8",
      headers: securityHeaders(f.nonce)
    })
  }
  const withDb = <A>(effect: Effect.Effect<A, OperationError.OperationError, PgClient.PgClient>) =>
    Effect.provideService(effect, PgClient.PgClient, ctx.client)
  const failure = (title: string) => (e: OperationError.OperationError) =>
    Effect.succeed(
      e.reason._tag === "NotFound" || e.reason._tag === "InvalidInput"
        ? page("not found", Pages.notFound(e.message, base), 404)
        : page(title, Pages.outcome(title, e.message, false, base), statusOf(e))
    )

  const overview = Effect.map(SubscriptionRef.get(ctx.hub.published), (p) => page("whizbang — operations", raw(p.body), 200, true))

  const events = Effect.sync(() =>
    HttpServerResponse.stream(
      Stream.merge(
        SubscriptionRef.changes(ctx.hub.published).pipe(Stream.map((p) => `event: update\ndata: ${JSON.stringify(p)}\n\n`)),
        Stream.tick("15 seconds").pipe(Stream.map(() => ": keep-alive\n\n"))
      ).pipe(Stream.encodeText),
      { contentType: "text/event-stream", headers: { "cache-control": "no-store", "x-accel-buffering": "no" } }
    )
  )

  const snapshotJson = Effect.flatMap(ctx.hub.state, (s) =>
    Effect.succeed(
      HttpServerResponse.jsonUnsafe(
        {
          takenAt: s.takenAt ?? null,
          unavailableSince: s.unavailableSince ?? null,
          error: s.error ?? null,
          computations: s.computations,
          snapshot: s.snapshot ?? null
        },
        { headers: { "cache-control": "no-store" } }
      )
    )
  )

  const deadLetter = Effect.flatMap(HttpRouter.params, (params) =>
    withDb(DeadLetters.show(params.id ?? "")).pipe(
      Effect.map((d) => page(`dead letter ${d.id}`, Pages.deadLetter(d, base))),
      Effect.catchIf(
        (e) => e.reason._tag === "NotFound" || e.reason._tag === "InvalidInput",
        () =>
          Effect.succeed(
            page(
              "not found",
              Pages.notFound(`No dead letter ${params.id ?? ""}: it may have been retried or discarded already.`, base),
              404
            )
          )
      ),
      Effect.catch(failure("dead letter"))
    )
  )

  // Read when the page is opened, from the service schema's client (the page may show a tenant's schema).
  const tenants = (() => {
    const options = ctx.options.tenants
    if (options === undefined) return undefined
    const service = ctx.client.forSchema(options.serviceSchema)
    return Effect.gen(function* () {
      const catalog = yield* PgTenants.make(options.catalog).pipe(Effect.provideService(PgClient.PgClient, service))
      return yield* Tenants.overview({ top: options.top }).pipe(
        Effect.provideService(PgTenants.PgTenants, catalog),
        Effect.provideService(PgClient.PgClient, service)
      )
    }).pipe(
      Effect.map((o) => page("whizbang — tenants", Pages.tenants(o, base))),
      Effect.catchTag("PostgresError", (e) =>
        Effect.succeed(page("tenants", Pages.outcome("Tenants", `database: ${e.message}`, false, base), 503))
      ),
      Effect.catch(failure("tenants"))
    )
  })()

  const who = (request: HttpServerRequest.HttpServerRequest) =>
    `${Option.getOrElse(request.remoteAddress, () => "unknown address")} ${Option.getOrElse(Headers.get(request.headers, "user-agent"), () => "(no user agent)")}`

  const givenToken = (request: HttpServerRequest.HttpServerRequest, form: UrlParams.UrlParams) =>
    Option.getOrUndefined(
      Option.orElse(UrlParams.getFirst(form, "token"), () =>
        Option.orElse(Headers.get(request.headers, "x-whizbang-token"), () =>
          Option.map(
            Option.filter(Headers.get(request.headers, "authorization"), (a) => a.startsWith("Bearer ")),
            (a) => a.slice("Bearer ".length)
          )
        )
      )
    )

  const confirmPage =
    (toAction: (params: Readonly<Record<string, string | undefined>>) => Actions.Action) =>
    (request: HttpServerRequest.HttpServerRequest) =>
      Effect.flatMap(HttpRouter.params, (params) =>
        withDb(Actions.describe(toAction(params))).pipe(
          Effect.map((d) => page(`confirm: ${d.what}`, Pages.confirm(d, ctx.options.token !== undefined, pathOf(request), base))),
          Effect.catch(failure("action"))
        )
      )

  const perform =
    (toAction: (params: Readonly<Record<string, string | undefined>>) => Actions.Action) =>
    (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function* () {
        const params = yield* HttpRouter.params
        const action = toAction(params)
        const form = yield* request.urlParamsBody.pipe(Effect.orElseSucceed(() => UrlParams.empty))
        const at = new Date()
        const by = who(request)
        const target = `${action._tag.toLowerCase()} ${Object.values(params).join(" ")}`
        const refuse = (status: number, detail: string) =>
          Effect.as(
            ctx.hub.record({ at, who: by, what: target, outcome: "refused", detail }),
            page("refused", Pages.outcome("Refused", detail, false, base), status)
          )
        if (ctx.options.token === undefined) return yield* refuse(403, "refused: this page is read-only (started without --allow-actions)")
        const token = givenToken(request, form)
        if (token === undefined || token === "")
          return yield* refuse(401, "refused: no token given (the form's token field, or the x-whizbang-token header)")
        if (!Token.matches(ctx.options.token, token)) return yield* refuse(403, "refused: wrong token")
        if (Option.getOrUndefined(UrlParams.getFirst(form, "confirm")) !== "yes")
          return yield* refuse(400, "refused: not confirmed (send confirm=yes)")
        const described = yield* withDb(Actions.describe(action)).pipe(Effect.option)
        const what = Option.match(described, { onNone: () => target, onSome: (d) => d.what })
        return yield* withDb(Actions.run(action)).pipe(
          Effect.matchEffect({
            onSuccess: (detail) =>
              Effect.as(
                ctx.hub.record({ at, who: by, what, outcome: "done", detail }),
                page("done", Pages.outcome(`Done: ${what}`, detail, true, base))
              ),
            onFailure: (e) =>
              Effect.as(
                ctx.hub.record({ at, who: by, what, outcome: "failed", detail: e.message }),
                e.reason._tag === "NotFound" || e.reason._tag === "InvalidInput"
                  ? page("not found", Pages.notFound(e.message, base), 404)
                  : page("failed", Pages.outcome(`Failed: ${what}`, e.message, false, base), statusOf(e))
              )
          })
        )
      })

  const retry = (p: Readonly<Record<string, string | undefined>>): Actions.Action => ({ _tag: "Retry", id: p.id ?? "" })
  const discard = (p: Readonly<Record<string, string | undefined>>): Actions.Action => ({ _tag: "Discard", id: p.id ?? "" })
  const cutover = (p: Readonly<Record<string, string | undefined>>): Actions.Action => ({ _tag: "Cutover", key: p.key ?? "" })
  const rollback = (p: Readonly<Record<string, string | undefined>>): Actions.Action => ({ _tag: "Rollback", base: p.base ?? "" })
  const notFound = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.succeed(page("not found", Pages.notFound(`Nothing at ${pathOf(request)}.`, base), 404))

  const at = (path: string) => `${base}${path}` as HttpRouter.PathInput

  return Layer.mergeAll(
    HttpRouter.add("GET", at("/"), overview),
    HttpRouter.add("GET", at("/events"), events),
    HttpRouter.add("GET", at("/snapshot.json"), snapshotJson),
    ...(tenants === undefined ? [] : [HttpRouter.add("GET", at("/tenants"), tenants)]),
    HttpRouter.add("GET", at("/dead-letters/:id"), deadLetter),
    HttpRouter.add("GET", at("/dead-letters/:id/retry"), confirmPage(retry)),
    HttpRouter.add("POST", at("/dead-letters/:id/retry"), perform(retry)),
    HttpRouter.add("GET", at("/dead-letters/:id/discard"), confirmPage(discard)),
    HttpRouter.add("POST", at("/dead-letters/:id/discard"), perform(discard)),
    HttpRouter.add("GET", at("/versions/:key/cutover"), confirmPage(cutover)),
    HttpRouter.add("POST", at("/versions/:key/cutover"), perform(cutover)),
    HttpRouter.add("GET", at("/perspectives/:base/rollback"), confirmPage(rollback)),
    HttpRouter.add("POST", at("/perspectives/:base/rollback"), perform(rollback)),
    HttpRouter.add("*", "/*", notFound)
  )
}
