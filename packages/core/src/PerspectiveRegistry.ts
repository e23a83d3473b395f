/**
 * The runner registry: perspective name -> runner, and event type -> the perspectives that handle it.
 *
 * Built once at start-up from every perspective of the service. Building validates each definition
 * (`Perspective.validate`: name, handlers) and fails on a duplicate name (two perspectives would share one table); looking up a name nobody registered fails with {@link UnknownPerspective}
 * naming it, so a work row for a removed perspective is reported, not silently dropped.
 *
 * **When to use**: workers resolve runners here by the `perspective_name` of claimed work; the routing map
 * tells the append path which perspectives receive work rows for an event type.
 *
 * @since 0.1.0
 */
import { Context, Data, Effect, Layer } from "effect"
import { DuplicatePerspectiveName, type PerspectiveDefinitionError } from "./DefinitionErrors.js"
import * as Perspective from "./Perspective.js"
import * as PerspectiveRunner from "./PerspectiveRunner.js"

/**
 * No perspective is registered under the requested name.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownPerspective extends Data.TaggedError("UnknownPerspective")<{
  readonly perspectiveName: string
  readonly known: ReadonlyArray<string>
}> {
  override get message(): string {
    return `no perspective runner registered for "${this.perspectiveName}" (registered: ${this.known.join(", ") || "none"})`
  }
}

/**
 * The registry's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  /** Registered names, in registration order. */
  readonly names: ReadonlyArray<string>
  /** Every event type some perspective handles, in first-seen order. */
  readonly eventTypes: ReadonlyArray<string>
  readonly get: (perspectiveName: string) => Effect.Effect<PerspectiveRunner.PerspectiveRunner, UnknownPerspective>
  /** Names of the perspectives handling `eventType`, in registration order; empty when none does. */
  readonly perspectivesFor: (eventType: string) => ReadonlyArray<string>
}

/**
 * The registry as a service.
 *
 * @category services
 * @since 0.1.0
 */
export class PerspectiveRegistry extends Context.Service<PerspectiveRegistry, Shape>()("@whizbang/core/PerspectiveRegistry") {}

/**
 * Builds a registry from runners.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromRunners = (runners: Iterable<PerspectiveRunner.PerspectiveRunner>): Effect.Effect<Shape, DuplicatePerspectiveName> =>
  Effect.gen(function* () {
    const byName = new Map<string, PerspectiveRunner.PerspectiveRunner>()
    const routes = new Map<string, Array<string>>()
    for (const runner of runners) {
      if (byName.has(runner.perspectiveName)) {
        return yield* new DuplicatePerspectiveName({ perspectiveName: runner.perspectiveName })
      }
      byName.set(runner.perspectiveName, runner)
      for (const eventType of runner.eventTypes) {
        const names = routes.get(eventType)
        if (names === undefined) routes.set(eventType, [runner.perspectiveName])
        else names.push(runner.perspectiveName)
      }
    }
    const names = [...byName.keys()]
    const none: ReadonlyArray<string> = []
    return PerspectiveRegistry.of({
      names,
      eventTypes: [...routes.keys()],
      get: (perspectiveName) => {
        const runner = byName.get(perspectiveName)
        return runner === undefined ? Effect.fail(new UnknownPerspective({ perspectiveName, known: names })) : Effect.succeed(runner)
      },
      perspectivesFor: (eventType) => routes.get(eventType) ?? none
    })
  })

/**
 * Builds a registry from perspective definitions, validating each one first.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (perspectives: Iterable<Perspective.Any>): Effect.Effect<Shape, PerspectiveDefinitionError> =>
  Effect.forEach(perspectives, Perspective.validate).pipe(Effect.flatMap((valid) => fromRunners(valid.map(PerspectiveRunner.make))))

/**
 * A layer providing the registry of `perspectives`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (perspectives: Iterable<Perspective.Any>): Layer.Layer<PerspectiveRegistry, PerspectiveDefinitionError> =>
  Layer.effect(PerspectiveRegistry, make(perspectives))
