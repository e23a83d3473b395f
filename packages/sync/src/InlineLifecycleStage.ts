/**
 * Whether the current fiber runs inside an inline lifecycle stage (one the perspective worker awaits before it
 * goes on). The worker sets it (it is core's `LifecycleStage.Inline` flag); perspective sync waits refuse to
 * start when it is true, because the worker that would process the awaited events is waiting for the stage.
 *
 * @since 0.1.0
 */
import { LifecycleStage } from "@whizbang/core"
import type { Context } from "effect"
import { Effect } from "effect"

/**
 * `true` inside an inline stage; `false` (the default) elsewhere, including detached stages. The same reference
 * as core's `LifecycleStage.Inline`, so the worker's inline receptors are covered.
 *
 * @category references
 * @since 0.1.0
 */
export const InlineLifecycleStage: Context.Reference<boolean> = LifecycleStage.Inline

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
