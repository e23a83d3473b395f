// The routes the hub answers without a query of their own: the live page, its event stream, and the snapshot as
// JSON. Every open page shares the hub's one computation.
import { Effect, Stream, SubscriptionRef } from "effect"
import { HttpServerResponse } from "effect/http"
import { raw } from "./html.js"
import { type Context, page } from "./respond.js"

export const overview = (ctx: Context) =>
  Effect.map(SubscriptionRef.get(ctx.hub.published), (p) => page(ctx, "whizbang — operations", raw(p.body), 200, true))

export const events = (ctx: Context) =>
  Effect.sync(() =>
    HttpServerResponse.stream(
      Stream.merge(
        SubscriptionRef.changes(ctx.hub.published).pipe(Stream.map((p) => `event: update\ndata: ${JSON.stringify(p)}\n\n`)),
        Stream.tick("15 seconds").pipe(Stream.map(() => ": keep-alive\n\n"))
      ).pipe(Stream.encodeText),
      { contentType: "text/event-stream", headers: { "cache-control": "no-store", "x-accel-buffering": "no" } }
    )
  )

export const snapshotJson = (ctx: Context) =>
  Effect.flatMap(ctx.hub.state, (s) =>
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
