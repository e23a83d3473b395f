/**
 * The security context of the envelope being processed: established per envelope before lifecycle receptors run,
 * and never leaking from one envelope to the next (it is provided to each receptor's fiber, not set globally).
 *
 * - With a {@link SecurityContextProvider}, its result is the context.
 * - When there is no provider, or it returns nothing (or fails), the envelope's own scope is used, and every
 *   {@link SecurityCallbacks} callback runs once with it.
 * - Receptors read it with `yield* SecurityContext.current` (an `Option`).
 *
 * @since 0.1.0
 */
import { Context, Effect, Option } from "effect"
import type { Envelope, EventScope } from "./Envelope.js"

/**
 * The established context: who, which tenant, which roles.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScopeContext extends EventScope {
  /** Where it came from: the provider, or the envelope's scope. */
  readonly source: "provider" | "envelope"
}

/**
 * The context of the current envelope (none outside receptor invocations).
 *
 * @category references
 * @since 0.1.0
 */
export const Current = Context.Reference<Option.Option<ScopeContext>>("@whizbang/core/SecurityContext/Current", {
  defaultValue: () => Option.none()
})

/**
 * Reads the current context.
 *
 * @category accessors
 * @since 0.1.0
 */
export const current: Effect.Effect<Option.Option<ScopeContext>> = Effect.service(Current)

/**
 * Establishes the security context of an envelope (for example from a token carried in metadata).
 *
 * @category services
 * @since 0.1.0
 */
export class SecurityContextProvider extends Context.Service<
  SecurityContextProvider,
  {
    readonly establish: (envelope: Envelope) => Effect.Effect<Option.Option<EventScope>, unknown>
  }
>()("@whizbang/core/SecurityContextProvider") {}

/**
 * Callbacks run when the context falls back to the envelope's scope (no provider, or the provider gave none).
 *
 * @category services
 * @since 0.1.0
 */
export class SecurityCallbacks extends Context.Service<
  SecurityCallbacks,
  ReadonlyArray<(context: ScopeContext, envelope: Envelope) => Effect.Effect<void>>
>()("@whizbang/core/SecurityCallbacks") {}

const hasScope = (scope: EventScope) => scope.userId !== undefined || scope.tenantId !== undefined || (scope.roles?.length ?? 0) > 0

/**
 * Establishes the context for `envelope` and runs `effect` with it; the context is gone when `effect` ends.
 *
 * @category combinators
 * @since 0.1.0
 */
export const withEnvelope = <A, E, R>(envelope: Envelope, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.gen(function* () {
    const provider = yield* Effect.serviceOption(SecurityContextProvider)
    const fromProvider = Option.isSome(provider)
      ? yield* provider.value
          .establish(envelope)
          .pipe(
            Effect.catchCause((cause) =>
              Effect.as(Effect.logWarning("security context provider failed; using the envelope's scope", cause), Option.none())
            )
          )
      : Option.none<EventScope>()
    if (Option.isSome(fromProvider)) {
      return yield* Effect.provideService(effect, Current, Option.some({ ...fromProvider.value, source: "provider" as const }))
    }
    if (!hasScope(envelope.scope)) return yield* Effect.provideService(effect, Current, Option.none())
    const context: ScopeContext = { ...envelope.scope, source: "envelope" }
    const callbacks = yield* Effect.serviceOption(SecurityCallbacks)
    if (Option.isSome(callbacks)) {
      yield* Effect.forEach(callbacks.value, (callback) => callback(context, envelope), { discard: true })
    }
    return yield* Effect.provideService(effect, Current, Option.some(context))
  })
