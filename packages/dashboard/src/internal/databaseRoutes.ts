// The pages read from the database when they are opened: a dead letter, and the tenants.
import { DeadLetters, Tenants } from "@whizbang/cli"
import { PgClient, PgTenants } from "@whizbang/postgres"
import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import * as Pages from "./pages.js"
import { type Context, failure, page, withDb } from "./respond.js"

export const deadLetter = (ctx: Context) => {
  const base = ctx.options.basePath
  return Effect.flatMap(HttpRouter.params, (params) =>
    withDb(ctx, DeadLetters.show(params.id ?? "")).pipe(
      Effect.map((d) => page(ctx, `dead letter ${d.id}`, Pages.deadLetter(d, base))),
      Effect.catchIf(
        (e) => e.reason._tag === "NotFound" || e.reason._tag === "InvalidInput",
        () =>
          Effect.succeed(
            page(
              ctx,
              "not found",
              Pages.notFound(`No dead letter ${params.id ?? ""}: it may have been retried or discarded already.`, base),
              404
            )
          )
      ),
      Effect.catch(failure(ctx, "dead letter"))
    )
  )
}

/** `undefined` without a tenant catalog (no page). */
export const tenants = (ctx: Context) => {
  // Read when the page is opened, from the service schema's client (the page may show a tenant's schema).
  const options = ctx.options.tenants
  if (options === undefined) return undefined
  const base = ctx.options.basePath
  const service = ctx.client.forSchema(options.serviceSchema)
  return Effect.gen(function* () {
    const catalog = yield* PgTenants.make(options.catalog).pipe(Effect.provideService(PgClient.PgClient, service))
    return yield* Tenants.overview({ top: options.top }).pipe(
      Effect.provideService(PgTenants.PgTenants, catalog),
      Effect.provideService(PgClient.PgClient, service)
    )
  }).pipe(
    Effect.map((o) => page(ctx, "whizbang — tenants", Pages.tenants(o, base))),
    Effect.catchTag("PostgresError", (e) =>
      Effect.succeed(page(ctx, "tenants", Pages.outcome("Tenants", `database: ${e.message}`, false, base), 503))
    ),
    Effect.catch(failure(ctx, "tenants"))
  )
}
