/**
 * The pool `dedicated` made for a schema-bound view: one per client, whatever the number of views, so tenants
 * share it (a pool per tenant would multiply connections by the tenants). Made on first use, in this scope, and
 * sized by the largest request whatever their order: a tenant's worker (its consumers, claim loop and renewal)
 * and its replay of history ask for different sizes, and the first to ask used to size it for both (a replay
 * first would have left every tenant's worker one connection).
 *
 * @internal
 */
import { Effect, Scope } from "effect"
import type { Shape } from "../PgClient.js"

/**
 * Returns the shared pool's client for a request of `maxConnections`; `build` makes it, with the size asked for so
 * far, in the current scope.
 */
export const make = (
  build: (maxConnections: number) => Effect.Effect<Shape, never, Scope.Scope>
): Effect.Effect<(maxConnections: number) => Effect.Effect<Shape>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    let requested = 1
    const madeOnce = yield* Effect.cached(Effect.suspend(() => Effect.provideService(build(requested), Scope.Scope, scope)))
    return (maxConnections: number): Effect.Effect<Shape> =>
      Effect.suspend(() => {
        requested = Math.max(requested, maxConnections)
        return Effect.tap(madeOnce, (made) =>
          Effect.sync(() => {
            // pg's pool reads `options.max` at each checkout: raising it takes effect at once.
            if (made.pool.options.max === undefined || made.pool.options.max < requested) made.pool.options.max = requested
          })
        )
      })
  })
