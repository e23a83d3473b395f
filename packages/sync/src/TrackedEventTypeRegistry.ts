/**
 * Which perspectives track which event types: the emitting side asks it whether an event needs sync tracking
 * and for which perspective names to track it.
 *
 * Two ways in: static mappings given to {@link make} / {@link layer} (what codegen will emit), and dynamic
 * registration with `register` at any time afterwards (late-loaded modules, tests). Both validate their input
 * and fail with a typed {@link TrackedEventTypeRegistryError}; lookups never fail — an unknown type tracks nothing.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option } from "effect"
import { TrackedEventTypeRegistryError } from "./SyncError.js"

/**
 * Static mappings: event type -> perspective names.
 *
 * @category models
 * @since 0.1.0
 */
export type Mappings =
  | Readonly<Record<string, ReadonlyArray<string>>>
  | Iterable<readonly [eventType: string, perspectiveNames: ReadonlyArray<string>]>

/**
 * The registry's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface TrackedEventTypeRegistryShape {
  readonly shouldTrack: (eventType: string) => Effect.Effect<boolean>
  /** The first perspective registered for the type. */
  readonly getPerspectiveName: (eventType: string) => Effect.Effect<Option.Option<string>>
  /** Every perspective registered for the type, in registration order; empty for unknown types. */
  readonly getPerspectiveNames: (eventType: string) => Effect.Effect<ReadonlyArray<string>>
  /** Adds perspectives for a type; registering a pair twice keeps one. */
  readonly register: (
    eventType: string,
    perspectiveNames: string | ReadonlyArray<string>
  ) => Effect.Effect<void, TrackedEventTypeRegistryError>
}

/**
 * The registry service.
 *
 * @category services
 * @since 0.1.0
 */
export class TrackedEventTypeRegistry extends Context.Service<TrackedEventTypeRegistry, TrackedEventTypeRegistryShape>()(
  "@whizbang/sync/TrackedEventTypeRegistry"
) {}

const isName = (u: unknown): u is string => typeof u === "string" && u.trim().length > 0

const validate = (eventType: unknown, perspectiveNames: unknown) => {
  if (!isName(eventType)) {
    return Effect.fail(new TrackedEventTypeRegistryError({ reason: { _tag: "InvalidEventType", eventType } }))
  }
  const names: ReadonlyArray<unknown> = Array.isArray(perspectiveNames) ? perspectiveNames : [perspectiveNames]
  const bad = names.length === 0 ? [undefined] : names.filter((n) => !isName(n))
  return bad.length > 0
    ? Effect.fail(new TrackedEventTypeRegistryError({ reason: { _tag: "InvalidPerspectiveName", eventType, perspectiveName: bad[0] } }))
    : Effect.succeed([eventType, names as ReadonlyArray<string>] as const)
}

/**
 * Makes a registry, optionally seeded with static mappings (validated).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (mappings?: Mappings): Effect.Effect<TrackedEventTypeRegistryShape, TrackedEventTypeRegistryError> =>
  Effect.gen(function* () {
    const byType = new Map<string, Array<string>>()
    const register = (eventType: string, perspectiveNames: string | ReadonlyArray<string>) =>
      Effect.map(validate(eventType, perspectiveNames), ([type, names]) => {
        const list = byType.get(type) ?? []
        for (const name of names) if (!list.includes(name)) list.push(name)
        byType.set(type, list)
      })
    const entries = mappings === undefined ? [] : Symbol.iterator in mappings ? [...mappings] : Object.entries(mappings)
    for (const [eventType, names] of entries) yield* register(eventType, names)
    const names = (eventType: string): ReadonlyArray<string> => byType.get(eventType) ?? []
    return TrackedEventTypeRegistry.of({
      shouldTrack: (eventType) => Effect.sync(() => names(eventType).length > 0),
      getPerspectiveName: (eventType) => Effect.sync(() => Option.fromUndefinedOr(names(eventType)[0])),
      getPerspectiveNames: (eventType) => Effect.sync(() => names(eventType).slice()),
      register
    })
  })

/**
 * The registry as a layer; fails at start-up on bad static mappings.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (mappings?: Mappings): Layer.Layer<TrackedEventTypeRegistry, TrackedEventTypeRegistryError> =>
  Layer.effect(TrackedEventTypeRegistry, make(mappings))

/**
 * The registry of every perspective's event types (the same routing as the work rows), plus — when given —
 * codegen's generated `trackedEventTypes` map (`whizbang.generated.ts`), whose type {@link Mappings} accepts as is.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerFromPerspectives = (
  perspectives: ReadonlyArray<{ readonly name: string; readonly eventTypes: ReadonlyArray<string> }>,
  trackedEventTypes?: Mappings
): Layer.Layer<TrackedEventTypeRegistry, TrackedEventTypeRegistryError> => {
  const generated =
    trackedEventTypes === undefined ? [] : Symbol.iterator in trackedEventTypes ? [...trackedEventTypes] : Object.entries(trackedEventTypes)
  return layer([...perspectives.flatMap((p) => p.eventTypes.map((type) => [type, [p.name]] as const)), ...generated])
}
