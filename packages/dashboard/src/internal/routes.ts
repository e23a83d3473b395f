// The routes, under the base path. Reads need nothing; an action's POST needs the server started with actions
// allowed, the token (form field `token`, header `x-whizbang-token` or `authorization: Bearer <token>`) and
// `confirm=yes` (the confirmation form sends it). Every POST is recorded, refused ones too.
import { Effect, Layer } from "effect"
import { HttpRouter, type HttpServerRequest } from "effect/http"
import { confirmPage, cutover, discard, perform, retry, rollback } from "./actionRoutes.js"
import { deadLetter, tenants } from "./databaseRoutes.js"
import { events, overview, snapshotJson } from "./hubRoutes.js"
import * as Pages from "./pages.js"
import { type Context, page, pathOf } from "./respond.js"

export const layer = (ctx: Context) => {
  const base = ctx.options.basePath
  const tenantsPage = tenants(ctx)
  const notFound = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.succeed(page(ctx, "not found", Pages.notFound(`Nothing at ${pathOf(request)}.`, base), 404))

  const at = (path: string) => `${base}${path}` as HttpRouter.PathInput

  return Layer.mergeAll(
    HttpRouter.add("GET", at("/"), overview(ctx)),
    HttpRouter.add("GET", at("/events"), events(ctx)),
    HttpRouter.add("GET", at("/snapshot.json"), snapshotJson(ctx)),
    ...(tenantsPage === undefined ? [] : [HttpRouter.add("GET", at("/tenants"), tenantsPage)]),
    HttpRouter.add("GET", at("/dead-letters/:id"), deadLetter(ctx)),
    HttpRouter.add("GET", at("/dead-letters/:id/retry"), confirmPage(ctx, retry)),
    HttpRouter.add("POST", at("/dead-letters/:id/retry"), perform(ctx, retry)),
    HttpRouter.add("GET", at("/dead-letters/:id/discard"), confirmPage(ctx, discard)),
    HttpRouter.add("POST", at("/dead-letters/:id/discard"), perform(ctx, discard)),
    HttpRouter.add("GET", at("/versions/:key/cutover"), confirmPage(ctx, cutover)),
    HttpRouter.add("POST", at("/versions/:key/cutover"), perform(ctx, cutover)),
    HttpRouter.add("GET", at("/perspectives/:base/rollback"), confirmPage(ctx, rollback)),
    HttpRouter.add("POST", at("/perspectives/:base/rollback"), perform(ctx, rollback)),
    HttpRouter.add("*", "/*", notFound)
  )
}
