// The actions' routes: a GET shows the confirmation, the POST checks the token and the confirmation, runs the
// action and records the outcome (refused ones too) in the action log.
import { Effect, Option } from "effect"
import { Headers, HttpRouter, type HttpServerRequest, UrlParams } from "effect/http"
import * as Actions from "./actions.js"
import * as Pages from "./pages.js"
import { type Context, failure, page, pathOf, statusOf, withDb } from "./respond.js"
import * as Token from "./token.js"

type Params = Readonly<Record<string, string | undefined>>

export const retry = (p: Params): Actions.Action => ({ _tag: "Retry", id: p.id ?? "" })
export const discard = (p: Params): Actions.Action => ({ _tag: "Discard", id: p.id ?? "" })
export const cutover = (p: Params): Actions.Action => ({ _tag: "Cutover", key: p.key ?? "" })
export const rollback = (p: Params): Actions.Action => ({ _tag: "Rollback", base: p.base ?? "" })

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

export const confirmPage = (ctx: Context, toAction: (params: Params) => Actions.Action) => {
  const base = ctx.options.basePath
  return (request: HttpServerRequest.HttpServerRequest) =>
    Effect.flatMap(HttpRouter.params, (params) =>
      withDb(ctx, Actions.describe(toAction(params))).pipe(
        Effect.map((d) => page(ctx, `confirm: ${d.what}`, Pages.confirm(d, ctx.options.token !== undefined, pathOf(request), base))),
        Effect.catch(failure(ctx, "action"))
      )
    )
}

export const perform = (ctx: Context, toAction: (params: Params) => Actions.Action) => {
  const base = ctx.options.basePath
  return (request: HttpServerRequest.HttpServerRequest) =>
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
          page(ctx, "refused", Pages.outcome("Refused", detail, false, base), status)
        )
      if (ctx.options.token === undefined) return yield* refuse(403, "refused: this page is read-only (started without --allow-actions)")
      const token = givenToken(request, form)
      if (token === undefined || token === "")
        return yield* refuse(401, "refused: no token given (the form's token field, or the x-whizbang-token header)")
      if (!Token.matches(ctx.options.token, token)) return yield* refuse(403, "refused: wrong token")
      if (Option.getOrUndefined(UrlParams.getFirst(form, "confirm")) !== "yes")
        return yield* refuse(400, "refused: not confirmed (send confirm=yes)")
      const described = yield* withDb(ctx, Actions.describe(action)).pipe(Effect.option)
      const what = Option.match(described, { onNone: () => target, onSome: (d) => d.what })
      return yield* withDb(ctx, Actions.run(action)).pipe(
        Effect.matchEffect({
          onSuccess: (detail) =>
            Effect.as(
              ctx.hub.record({ at, who: by, what, outcome: "done", detail }),
              page(ctx, "done", Pages.outcome(`Done: ${what}`, detail, true, base))
            ),
          onFailure: (e) =>
            Effect.as(
              ctx.hub.record({ at, who: by, what, outcome: "failed", detail: e.message }),
              e.reason._tag === "NotFound" || e.reason._tag === "InvalidInput"
                ? page(ctx, "not found", Pages.notFound(e.message, base), 404)
                : page(ctx, "failed", Pages.outcome(`Failed: ${what}`, e.message, false, base), statusOf(e))
            )
        })
      )
    })
}
