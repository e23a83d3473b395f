/**
 * Waits, in a test, until the perspective worker fired a lifecycle stage for an event — `PostPerspective`,
 * `PostAllPerspectives`, `PostLifecycle` or `DeadLettered` — so the test goes on exactly when the worker got
 * there (no sleeps, no polling of read models).
 *
 * ```ts
 * const stages = yield* LifecycleStageAwaiter.make
 * const receptors = yield* stages.receptorsFor([OrderPlaced])   // give these to the worker's `receptors`
 * // ... append ...
 * yield* stages.awaitStage("PostAllPerspectives", { eventId })
 * ```
 *
 * The recording receptors run inline and only record; a stage fired before the wait began is found too. On
 * timeout: `AwaiterTimeoutError`, naming the stage and event and the stages seen for it so far.
 *
 * @since 0.2.0
 */
import { type Envelope, type EventDefinition, LifecycleStage, Receptor } from "@whizbang/core"
import { Duration, Effect } from "effect"
import type { AwaiterTimeoutError } from "./AwaiterTimeoutError.js"
import { Observed } from "./internal/observed.js"

/**
 * One stage the worker fired.
 *
 * @category models
 * @since 0.2.0
 */
export interface Fired {
  readonly stage: LifecycleStage.LifecycleStage
  readonly envelope: Envelope.Envelope
  /** For `DeadLettered`: the perspectives that dead-lettered the event. */
  readonly deadLetteredBy: ReadonlyArray<string>
}

/**
 * What to wait for: the stage for one event id, or for any event of a type (or any event at all).
 *
 * @category models
 * @since 0.2.0
 */
export interface StageWait {
  readonly eventId?: string | undefined
  readonly eventType?: string | undefined
  /** Default 5 s. */
  readonly timeout?: Duration.Input | undefined
}

/**
 * The awaiter's operations.
 *
 * @category models
 * @since 0.2.0
 */
export interface LifecycleStageAwaiterShape {
  /** Recording receptors for these event types at these stages (default: every stage), for the worker's config. */
  readonly receptorsFor: (
    eventTypes: ReadonlyArray<string | EventDefinition.Any>,
    stages?: ReadonlyArray<LifecycleStage.LifecycleStage>
  ) => Effect.Effect<ReadonlyArray<Receptor.Receptor>, Receptor.InvalidReceptor>
  /** The first firing of `stage` that matches, recorded before or during the wait. */
  readonly awaitStage: (stage: LifecycleStage.LifecycleStage, wait?: StageWait) => Effect.Effect<Fired, AwaiterTimeoutError>
  /** Every firing so far, in order. */
  readonly fired: Effect.Effect<ReadonlyArray<Fired>>
}

/**
 * Makes an awaiter (each has its own record).
 *
 * @category constructors
 * @since 0.2.0
 */
export const make: Effect.Effect<LifecycleStageAwaiterShape> = Effect.sync(() => {
  const observed = new Observed<Fired>()
  const describe = (stage: string, wait: StageWait | undefined) =>
    `stage ${stage} for ${wait?.eventId !== undefined ? `event ${wait.eventId}` : wait?.eventType !== undefined ? `a ${wait.eventType} event` : "any event"}`
  return {
    receptorsFor: (eventTypes, stages = LifecycleStage.stages) =>
      Effect.forEach(stages, (stage) =>
        Receptor.validate(
          Receptor.make({
            name: `whizbang.testing.${stage}`,
            handles: eventTypes,
            stage,
            handle: (envelope) =>
              Effect.flatMap(LifecycleStage.DeadLetteredBy, (deadLetteredBy) =>
                Effect.sync(() => observed.record({ stage, envelope, deadLetteredBy }))
              )
          })
        )
      ),
    awaitStage: (stage, wait) =>
      observed.awaitFirst(
        (f) =>
          f.stage === stage &&
          (wait?.eventId === undefined || f.envelope.eventId === wait.eventId) &&
          (wait?.eventType === undefined || f.envelope.eventType === wait.eventType),
        wait?.timeout ?? Duration.seconds(5),
        "LifecycleStageAwaiter",
        () => {
          const same = observed.items.filter((f) => wait?.eventId === undefined || f.envelope.eventId === wait.eventId)
          return `${describe(stage, wait)} (stages seen${wait?.eventId === undefined ? "" : " for it"}: ${
            [...new Set(same.map((f) => f.stage))].join(", ") || "none"
          })`
        }
      ),
    fired: Effect.sync(() => observed.items.slice())
  }
})
