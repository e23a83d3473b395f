/**
 * Whether the current fiber runs inside an inline lifecycle stage (one the perspective worker awaits before it
 * commits). The worker sets it with {@link withInlineStage}; perspective sync waits refuse to start when it is
 * true, because the events they would wait for cannot be committed until the stage returns.
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"

/**
 * `true` inside an inline stage; `false` (the default) elsewhere, including detached stages.
 *
 * @category references
 * @since 0.1.0
 */
export const InlineLifecycleStage: Context.Reference<boolean> = Context.Reference("@whizbang/sync/InlineLifecycleStage", {
  defaultValue: () => false
})

/**
 * Runs `effect` as part of an inline stage.
 *
 * @category combinators
 * @since 0.1.0
 */
export const withInlineStage = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, InlineLifecycleStage, true)

/**
 * Runs `effect` as part of a detached stage (clears an inherited inline flag).
 *
 * @category combinators
 * @since 0.1.0
 */
export const withDetachedStage = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, InlineLifecycleStage, false)
