/**
 * A perspective runner folds one stream's pending events into that stream's stored model.
 *
 * It is the type-erased form of a {@link Perspective.Perspective} that registries and workers hold: it takes the
 * stored (encoded) model, decodes it with the perspective's schema, applies the events in event-id order, and
 * returns the encoded model to write. It never fails: a failing event stops the fold at that event and the
 * outcome reports what was applied before it, so the caller can commit the progress and record the failure
 * (nothing is skipped silently, and the cursor never moves past the failing event).
 *
 * The row action is the action returned by the last applied event: `delete` followed by a plain update
 * re-creates the row.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import * as Perspective from "./Perspective.js"

/**
 * The result of running a perspective over one stream's events.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunOutcome {
  readonly perspectiveName: string
  readonly streamId: string
  /** The encoded model to store (meaningful when `appliedEventIds` is non-empty). */
  readonly model: unknown
  readonly action: Perspective.Action
  /** Ids of the events applied, in order. */
  readonly appliedEventIds: ReadonlyArray<string>
  /** The last applied event id, absent when nothing was applied. */
  readonly lastEventId?: string
  /** The event that stopped the fold, absent when every event applied. */
  readonly failure?: Perspective.ApplyFailed
}

/**
 * A type-erased perspective runner.
 *
 * @category models
 * @since 0.1.0
 */
export interface PerspectiveRunner {
  readonly perspectiveName: string
  readonly eventTypes: ReadonlyArray<string>
  /**
   * Applies `events` (all of `streamId`) to `stored`, the encoded model (`undefined` when the stream has no row
   * yet, which starts from the perspective's initial model).
   */
  readonly run: (
    streamId: string,
    stored: unknown,
    events: ReadonlyArray<Perspective.EventEnvelope>
  ) => Effect.Effect<RunOutcome>
}

const byEventId = (a: Perspective.EventEnvelope, b: Perspective.EventEnvelope) =>
  a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0

/**
 * Builds the runner of a perspective.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <M, E>(perspective: Perspective.Perspective<M, E>): PerspectiveRunner => {
  const decode = Schema.decodeUnknownEffect(perspective.model)
  const encode = Schema.encodeUnknownEffect(perspective.model)
  const schemaFailure = (event: Perspective.EventEnvelope | undefined, streamId: string, reason: string) =>
    new Perspective.ApplyFailed({
      perspectiveName: perspective.name,
      eventId: event?.eventId ?? "",
      eventType: event?.eventType ?? "",
      reason: `${reason} (stream ${streamId})`
    })

  const run = (streamId: string, stored: unknown, events: ReadonlyArray<Perspective.EventEnvelope>) =>
    Effect.gen(function*() {
      const ordered = [...events].sort(byEventId)
      const empty = { perspectiveName: perspective.name, streamId, model: stored, action: "none" as const, appliedEventIds: [] }
      const decoded = yield* Effect.result(stored === undefined ? Effect.succeed(perspective.initial) : decode(stored))
      if (decoded._tag === "Failure") {
        return { ...empty, failure: schemaFailure(ordered[0], streamId, `stored model does not decode: ${decoded.failure.message}`) }
      }
      let model = decoded.success
      let action: Perspective.Action = "none"
      const applied: Array<string> = []
      let failure: Perspective.ApplyFailed | undefined
      for (const event of ordered) {
        const step = yield* Effect.result(Perspective.applyEvent(perspective, model, event))
        if (step._tag === "Failure") {
          failure = step.failure
          break
        }
        model = step.success.model
        action = step.success.action
        applied.push(event.eventId)
      }
      const encoded = yield* Effect.result(encode(model))
      if (encoded._tag === "Failure") {
        return { ...empty, failure: schemaFailure(ordered[0], streamId, `model does not encode: ${encoded.failure.message}`) }
      }
      const outcome: RunOutcome = { ...empty, model: encoded.success, action, appliedEventIds: applied }
      const last = applied.at(-1)
      return {
        ...outcome,
        ...(last === undefined ? {} : { lastEventId: last }),
        ...(failure === undefined ? {} : { failure })
      }
    })

  return { perspectiveName: perspective.name, eventTypes: perspective.eventTypes, run }
}
