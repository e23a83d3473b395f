/**
 * Perspective definitions: a named, pure fold from events to one read-model row per stream.
 *
 * A perspective has a model {@link Schema}, an initial model and one `apply` handler per event type. A handler
 * returns the next model, or `{ model, action }` where `action` is `"none"`, `"delete"` (remove the row) or
 * `"purge"` (remove the row and everything kept for it). Handlers are pure and synchronous; a handler that
 * throws fails only that event ({@link ApplyFailed}), never the worker.
 *
 * **Names.** A perspective name becomes the Postgres table suffix `wh_per_<name>`, so it must match
 * `/^[a-z][a-z0-9_]{0,47}$/`. Names are validated, never rewritten: silently snake-casing `OrderSummary`
 * would let `OrderSummary` and `order_summary` collide on one table. A rejected camelCase name carries its
 * deterministic snake_case suggestion in the error instead.
 *
 * **Envelopes.** {@link EventEnvelope} is the minimal structural shape a handler needs; a full envelope with
 * metadata and scope satisfies it.
 *
 * @since 0.1.0
 */
import { Data, Effect, Schema } from "effect"
import { InvalidPerspectiveName, MissingEventHandler } from "./DefinitionErrors.js"
import { toSnakeCase } from "./internal/snakeCase.js"

/**
 * The part of an event envelope a perspective handler reads.
 *
 * @category models
 * @since 0.1.0
 */
export interface EventEnvelope {
  readonly eventId: string
  readonly streamId: string
  readonly eventType: string
  readonly payload: unknown
}

/**
 * What happens to the stored row after an event: keep (upsert) it, delete it, or purge it.
 *
 * @category models
 * @since 0.1.0
 */
export type Action = "none" | "delete" | "purge"

/**
 * A model together with the action to take on its row.
 *
 * @category models
 * @since 0.1.0
 */
export interface Outcome<M> {
  readonly model: M
  readonly action: Action
}

/**
 * What a handler may return: the next model, or an {@link Outcome}.
 *
 * **Gotchas**: a plain object whose only keys are `model` and an `action` literal is read as an outcome. If
 * your model itself has exactly that shape, return {@link outcome}`(model, "none")`.
 *
 * @category models
 * @since 0.1.0
 */
export type ApplyResult<M> = M | Outcome<M>

/**
 * A pure handler for one event type.
 *
 * @category models
 * @since 0.1.0
 */
export type Handler<M> = (model: M, event: EventEnvelope) => ApplyResult<M>

/**
 * A validated perspective definition.
 *
 * @category models
 * @since 0.1.0
 */
export interface Perspective<M, E = M> {
  readonly name: string
  /** `wh_per_<name>`: the table its rows live in. */
  readonly tableName: string
  readonly model: Schema.Codec<M, E>
  readonly initial: M
  /** The event types it handles, in declaration order. */
  readonly eventTypes: ReadonlyArray<string>
  readonly handlers: Readonly<Record<string, Handler<M>>>
}

/**
 * A perspective of any model type, as held by registries.
 *
 * @category models
 * @since 0.1.0
 */
export type Any = Perspective<any, any>

/**
 * Applying one event failed: no handler for its type, or the handler threw.
 *
 * @category errors
 * @since 0.1.0
 */
export class ApplyFailed extends Data.TaggedError("ApplyFailed")<{
  readonly perspectiveName: string
  readonly eventId: string
  readonly eventType: string
  readonly reason: string
  readonly cause?: unknown
}> {
  override get message(): string {
    return `perspective "${this.perspectiveName}" failed to apply ${this.eventType} ${this.eventId}: ${this.reason}`
  }
}

const namePattern = /^[a-z][a-z0-9_]{0,47}$/
const outcomeBrand: unique symbol = Symbol.for("@whizbang/core/Perspective/Outcome")

/**
 * Returns `true` when `name` is a valid perspective name.
 *
 * @category validation
 * @since 0.1.0
 */
export const isValidName = (name: string): boolean => namePattern.test(name)

/**
 * Checks a perspective name, failing with {@link InvalidPerspectiveName} (with a snake_case suggestion when
 * one would be valid).
 *
 * @category validation
 * @since 0.1.0
 */
export const validateName = (name: string): Effect.Effect<string, InvalidPerspectiveName> =>
  isValidName(name) ? Effect.succeed(name) : Effect.fail(new InvalidPerspectiveName({ perspectiveName: name, suggestion: suggestName(name) }))

/**
 * The valid snake_case name to suggest for an invalid one (`OrderSummaryV2` -> `order_summary_v2`), when there is
 * one. Used in error messages and by codegen's diagnostics, never to rewrite a name.
 *
 * @category validation
 * @since 0.1.0
 */
export const suggestName = (name: string): string | undefined => {
  const snake = toSnakeCase(name)
  return isValidName(snake) ? snake : undefined
}

/**
 * Builds an explicit {@link Outcome}.
 *
 * @category constructors
 * @since 0.1.0
 */
export const outcome = <M>(model: M, action: Action): Outcome<M> =>
  Object.defineProperty({ model, action }, outcomeBrand, { value: true, enumerable: false })

/**
 * Defines a perspective. `eventTypes` defaults to the keys of `apply`; when given, every listed type needs a
 * handler or the definition fails with {@link MissingEventHandler}.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <M, E>(options: {
  readonly name: string
  readonly model: Schema.Codec<M, E>
  readonly initial: M
  readonly apply: Readonly<Record<string, Handler<M>>>
  readonly eventTypes?: ReadonlyArray<string>
}): Effect.Effect<Perspective<M, E>, InvalidPerspectiveName | MissingEventHandler> =>
  Effect.gen(function*() {
    const name = yield* validateName(options.name)
    const eventTypes = [...new Set(options.eventTypes ?? Object.keys(options.apply))]
    const missing = eventTypes.filter((type) => typeof options.apply[type] !== "function")
    if (missing.length > 0) return yield* new MissingEventHandler({ perspectiveName: name, eventTypes: missing })
    return {
      name,
      tableName: `wh_per_${name}`,
      model: options.model,
      initial: options.initial,
      eventTypes,
      handlers: { ...options.apply }
    }
  })

const isAction = (u: unknown): u is Action => u === "none" || u === "delete" || u === "purge"

/**
 * Normalises a handler's return value to an {@link Outcome}.
 *
 * @category combinators
 * @since 0.1.0
 */
export const toOutcome = <M>(result: ApplyResult<M>): Outcome<M> => {
  if (typeof result === "object" && result !== null) {
    if (outcomeBrand in result) return result as Outcome<M>
    const keys = Object.keys(result)
    if (keys.length === 2 && "model" in result && "action" in result && isAction(result.action)) {
      return result as Outcome<M>
    }
  }
  return { model: result as M, action: "none" }
}

/**
 * Applies one event to a model. Fails with {@link ApplyFailed} when the perspective has no handler for the
 * event's type or the handler throws.
 *
 * @category combinators
 * @since 0.1.0
 */
export const applyEvent = <M, E>(
  perspective: Perspective<M, E>,
  model: M,
  event: EventEnvelope
): Effect.Effect<Outcome<M>, ApplyFailed> => {
  const failed = (reason: string, cause?: unknown) =>
    new ApplyFailed({
      perspectiveName: perspective.name,
      eventId: event.eventId,
      eventType: event.eventType,
      reason,
      ...(cause === undefined ? {} : { cause })
    })
  const handler = Object.hasOwn(perspective.handlers, event.eventType) ? perspective.handlers[event.eventType] : undefined
  if (handler === undefined) return Effect.fail(failed(`no handler for event type "${event.eventType}"`))
  return Effect.try({
    try: () => toOutcome(handler(model, event)),
    catch: (cause) => failed(cause instanceof Error ? cause.message : String(cause), cause)
  })
}
