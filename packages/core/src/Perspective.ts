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
 * **Typed.** A definition is a plain value: `events` lists the {@link EventDefinition.EventDefinition}s it
 * handles, `apply` has exactly one handler per listed type (a misspelled or missing key does not compile), and
 * each handler's envelope carries the payload type of its definition's schema:
 *
 * ```ts
 * const balance = Perspective.make({
 *   name: "balance",
 *   events: [Deposited, Withdrawn],
 *   model: Schema.Struct({ total: Schema.Number }),
 *   initial: { total: 0 },
 *   apply: {
 *     Deposited: (m, e) => ({ total: m.total + e.payload.amount }),
 *     Withdrawn: (m, e) => ({ total: m.total - e.payload.amount })
 *   }
 * })
 * ```
 *
 * Nothing is checked when the value is made: the name, the handlers and the wiring are validated when a layer is
 * built from it ({@link validate}, `PerspectiveRegistry.make`), with the errors of `DefinitionErrors`.
 *
 * **Envelopes.** {@link EventEnvelope} is the minimal structural shape a handler needs; a full envelope with
 * metadata and scope satisfies it.
 *
 * @since 0.1.0
 */
import { Data, Effect, Result, type Schema } from "effect"
import { InvalidPerspectiveName, InvalidPerspectiveVersion, MissingEventHandler } from "./DefinitionErrors.js"
import type * as EventDefinition from "./EventDefinition.js"
import { toSnakeCase } from "./internal/snakeCase.js"

/**
 * The part of an event envelope a perspective handler reads.
 *
 * @category models
 * @since 0.1.0
 */
export interface EventEnvelope<Payload = unknown, Type extends string = string> {
  readonly eventId: string
  readonly streamId: string
  /** 1 for the first event of the stream, then +1 for each event. */
  readonly streamVersion: number
  readonly eventType: Type
  readonly payload: Payload
}

/**
 * The envelope a handler of definition `D` receives: its type name and its decoded payload.
 *
 * @category models
 * @since 0.1.0
 */
export type EnvelopeOf<D> = D extends EventDefinition.EventDefinition<infer Type, infer S> ? EventEnvelope<S["Type"], Type> : never

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
 * A pure handler for one event type, as a perspective holds it (type-erased; see {@link Handlers} for the typed
 * form `make` takes).
 *
 * @category models
 * @since 0.1.0
 */
export type Handler<M> = (model: M, event: EventEnvelope) => ApplyResult<M>

/**
 * The `apply` of a perspective over definitions `D`: one handler per type name, each receiving that
 * definition's envelope.
 *
 * @category models
 * @since 0.1.0
 */
export type Handlers<M, D extends EventDefinition.Any> = {
  readonly [Type in D["type"]]: (model: M, event: EnvelopeOf<Extract<D, { readonly type: Type }>>) => ApplyResult<M>
}

/**
 * A perspective definition.
 *
 * @category models
 * @since 0.1.0
 */
export interface Perspective<M, E = M> {
  /**
   * The perspective's key: its {@link baseName} for version 1, `<baseName>__v<version>` from version 2 on. Work
   * rows, cursors, dead letters, snapshots and metrics are filed under it, so two versions of one perspective are
   * processed side by side.
   */
  readonly name: string
  /** The name users read through: `wh_per_<baseName>` serves the live version's rows. */
  readonly baseName: string
  /** The version of its logic and model shape (1 when not given). A new version is rebuilt from history. */
  readonly version: number
  /** `wh_per_<baseName>`: the name its rows are read through (in Postgres, a view of the live version's table). */
  readonly tableName: string
  readonly model: Schema.Codec<M, E>
  readonly initial: M
  /** The definitions it handles, in declaration order. */
  readonly events: ReadonlyArray<EventDefinition.Any>
  /** Their type names, in declaration order. */
  readonly eventTypes: ReadonlyArray<string>
  readonly handlers: Readonly<Record<string, Handler<M>>>
}

/**
 * The decoded model type of a perspective.
 *
 * @category models
 * @since 0.1.0
 */
export type ModelOf<P> = P extends Perspective<infer M, any> ? M : never

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
const versionSuffix = /__v([1-9][0-9]{0,3})$/
const outcomeBrand: unique symbol = Symbol.for("@whizbang/core/Perspective/Outcome")

/**
 * Returns `true` when `name` is a valid perspective name.
 *
 * @category validation
 * @since 0.1.0
 */
export const isValidName = (name: string): boolean => {
  const match = versionSuffix.exec(name)
  if (match === null) return namePattern.test(name)
  const base = name.slice(0, match.index)
  return namePattern.test(base) && !versionSuffix.test(base)
}

/**
 * Returns `true` when `name` can be a perspective's base name: a valid name that does not end in `__v<digits>`
 * (that suffix is how keys name versions; give `version` instead).
 *
 * @category validation
 * @since 0.3.0
 */
export const isValidBaseName = (name: string): boolean => namePattern.test(name) && !versionSuffix.test(name)

/** The highest version a perspective can declare (its key must fit a Postgres identifier). */
export const maxVersion = 9999

/**
 * The key of version `version` of perspective `baseName`: the base name for version 1, `<base>__v<version>` after.
 *
 * @category versions
 * @since 0.3.0
 */
export const keyOf = (baseName: string, version: number): string => (version === 1 ? baseName : `${baseName}__v${version}`)

/**
 * Splits a key into its base name and version (`"balance__v2"` -> `{ baseName: "balance", version: 2 }`; a name
 * without a version suffix is version 1).
 *
 * @category versions
 * @since 0.3.0
 */
export const parseKey = (key: string): { readonly baseName: string; readonly version: number } => {
  const match = versionSuffix.exec(key)
  return match === null ? { baseName: key, version: 1 } : { baseName: key.slice(0, match.index), version: Number(match[1]) }
}

/**
 * The name of one version's own rows, always with its version (`"balance"` -> `"balance__v1"`): what a store is
 * asked for when it must read that version and not the one serving reads.
 *
 * @category versions
 * @since 0.3.0
 */
export const ownRowsName = (key: string): string => {
  const { baseName, version } = parseKey(key)
  return `${baseName}__v${version}`
}

/**
 * Checks a perspective name, failing with {@link InvalidPerspectiveName} (with a snake_case suggestion when
 * one would be valid).
 *
 * @category validation
 * @since 0.1.0
 */
export const validateName = (name: string): Effect.Effect<string, InvalidPerspectiveName> =>
  isValidName(name)
    ? Effect.succeed(name)
    : Effect.fail(new InvalidPerspectiveName({ perspectiveName: name, suggestion: suggestName(name) }))

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
 * Defines a perspective. Returns a plain value; {@link validate} (run by the layers that take perspectives)
 * checks its name and handlers.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <const Events extends ReadonlyArray<EventDefinition.Any>, S extends Schema.Codec<any, any>>(options: {
  /** The base name: `wh_per_<name>` is what users read through, whatever the version. */
  readonly name: string
  /**
   * The version of the logic and model shape, a whole number from 1 (the default) to 9999. Raising it makes a new
   * version, rebuilt from history in its own table while the old one keeps serving (see the postgres README).
   */
  readonly version?: number
  readonly events: Events
  readonly model: S
  readonly initial: S["Type"]
  readonly apply: NoInfer<Handlers<S["Type"], Events[number]>>
}): Perspective<S["Type"], S["Encoded"]> => ({
  name: keyOf(options.name, options.version ?? 1),
  baseName: options.name,
  version: options.version ?? 1,
  tableName: `wh_per_${options.name}`,
  model: options.model,
  initial: options.initial,
  events: options.events,
  eventTypes: [...new Set(options.events.map((definition) => definition.type))],
  // Erased here, sound at run time: the worker routes an event only to the handler of its own type, with the
  // payload decoded by that type's schema.
  handlers: { ...(options.apply as unknown as Readonly<Record<string, Handler<S["Type"]>>>) }
})

/**
 * Checks a definition: a valid name and a handler for every listed event type (a caller without the type
 * checker, or with a cast, can leave one out).
 *
 * @category validation
 * @since 0.1.0
 */
export const validate = <M, E>(
  perspective: Perspective<M, E>
): Effect.Effect<Perspective<M, E>, InvalidPerspectiveName | InvalidPerspectiveVersion | MissingEventHandler> =>
  Effect.gen(function* () {
    if (!isValidBaseName(perspective.baseName)) {
      return yield* new InvalidPerspectiveName({ perspectiveName: perspective.baseName, suggestion: suggestName(perspective.baseName) })
    }
    if (!Number.isInteger(perspective.version) || perspective.version < 1 || perspective.version > maxVersion) {
      return yield* new InvalidPerspectiveVersion({ perspectiveName: perspective.baseName, version: perspective.version })
    }
    yield* validateName(perspective.name)
    const missing = perspective.eventTypes.filter((type) => typeof perspective.handlers[type] !== "function")
    if (missing.length > 0) return yield* new MissingEventHandler({ perspectiveName: perspective.name, eventTypes: missing })
    return perspective
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
 * Applies one event to a model, synchronously: the outcome, or {@link ApplyFailed} when the perspective has no
 * handler for the event's type or the handler throws. The worker's folds use it (no effect per event).
 *
 * @category combinators
 * @since 0.1.0
 */
export const applyEventResult = <M, E>(
  perspective: Perspective<M, E>,
  model: M,
  event: EventEnvelope
): Result.Result<Outcome<M>, ApplyFailed> => {
  const failed = (reason: string, cause?: unknown) =>
    Result.fail(
      new ApplyFailed({
        perspectiveName: perspective.name,
        eventId: event.eventId,
        eventType: event.eventType,
        reason,
        ...(cause === undefined ? {} : { cause })
      })
    )
  const handler = Object.hasOwn(perspective.handlers, event.eventType) ? perspective.handlers[event.eventType] : undefined
  if (handler === undefined) return failed(`no handler for event type "${event.eventType}"`)
  try {
    return Result.succeed(toOutcome(handler(model, event)))
  } catch (cause) {
    return failed(cause instanceof Error ? cause.message : String(cause), cause)
  }
}

/**
 * Applies one event to a model. Fails with {@link ApplyFailed} when the perspective has no handler for the
 * event's type or the handler throws.
 *
 * @category combinators
 * @since 0.1.0
 */
export const applyEvent = <M, E>(perspective: Perspective<M, E>, model: M, event: EventEnvelope): Effect.Effect<Outcome<M>, ApplyFailed> =>
  Effect.suspend(() => Effect.fromResult(applyEventResult(perspective, model, event)))
