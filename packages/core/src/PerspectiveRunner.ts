/**
 * A perspective runner folds one stream's pending events into that stream's stored model.
 *
 * It is the type-erased form of a {@link Perspective.Perspective} that registries and workers hold: it takes the
 * stored (encoded) model, decodes it with the perspective's schema, applies the events in event-id order, and
 * returns the encoded model to write. It never fails: a failing event stops the fold at that event and the
 * outcome reports what was applied before it, so the caller can commit the progress and record the failure
 * (nothing is skipped silently, and the cursor never moves past the failing event).
 *
 * A model the schema cannot encode is blamed on the event whose handler returned it, and the events before it
 * still apply. A stored model that no longer decodes stops the pair at its first event (retried with backoff
 * like any failure) without attempting the others: the schema, not the events, needs fixing.
 *
 * The row action is the action returned by the last applied event: `delete` followed by a plain update
 * re-creates the row.
 *
 * @since 0.1.0
 */
import { Effect, Result, Schema } from "effect"
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
  /** Set when the failure is the stored model's (it no longer decodes), not the event's. */
  readonly storedModelUnreadable?: true
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
  readonly run: (streamId: string, stored: unknown, events: ReadonlyArray<Perspective.EventEnvelope>) => Effect.Effect<RunOutcome>
}

const byEventId = (a: Perspective.EventEnvelope, b: Perspective.EventEnvelope) =>
  a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0

/** A fold's result: the model after the applied events, the last action, and the event that stopped it. */
interface Folded<M> {
  readonly model: M
  readonly action: Perspective.Action
  readonly applied: ReadonlyArray<string>
  readonly failure: Perspective.ApplyFailed | undefined
}

// The worker hands events over in event-id order: then they need no sorted copy.
const inEventIdOrder = (events: ReadonlyArray<Perspective.EventEnvelope>) => {
  for (let i = 1; i < events.length; i++) if (events[i - 1]!.eventId > events[i]!.eventId) return false
  return true
}

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

  // Folds `events` from `start`, stopping at the first failing apply. Plain code: the fast path below runs it for
  // every pair, and an Effect per fold cost as much as the fold.
  const fold = (start: M, events: ReadonlyArray<Perspective.EventEnvelope>): Folded<M> => {
    let model = start
    let action: Perspective.Action = "none"
    const applied: Array<string> = []
    let failure: Perspective.ApplyFailed | undefined
    for (const event of events) {
      const step = Perspective.applyEventResult(perspective, model, event)
      if (step._tag === "Failure") {
        failure = step.failure
        break
      }
      model = step.success.model
      action = step.success.action
      applied.push(event.eventId)
    }
    return { model, action, applied, failure }
  }

  // The same fold, also stopping at the first event whose resulting model the schema cannot encode (that event is
  // the one to blame). Only run when the model of the plain fold did not encode.
  const foldEncodingEach = Effect.fnUntraced(function* (start: M, events: ReadonlyArray<Perspective.EventEnvelope>, streamId: string) {
    let done: Folded<M> & { readonly encoded?: unknown } = { model: start, action: "none", applied: [], failure: undefined }
    for (const event of events) {
      const step = fold(done.model, [event])
      if (step.failure !== undefined) return { ...done, failure: step.failure }
      const checked = yield* Effect.result(encode(step.model))
      if (checked._tag === "Failure") {
        const why = `the model returned for this event does not encode: ${checked.failure.message}`
        return { ...done, failure: schemaFailure(event, streamId, why) }
      }
      done = { ...step, applied: [...done.applied, event.eventId], encoded: checked.success }
    }
    return done
  })

  const initial = Effect.succeed(Result.succeed(perspective.initial))

  // `Effect.fnUntraced`, not a function returning `Effect.gen`: it runs once per (stream, perspective) of a cycle,
  // and on Node 20 every fresh generator closure costs about 2.3 µs (a new prototype and hidden class each time).
  const run = Effect.fnUntraced(function* (streamId: string, stored: unknown, events: ReadonlyArray<Perspective.EventEnvelope>) {
    const ordered = inEventIdOrder(events) ? events : [...events].sort(byEventId)
    const empty = { perspectiveName: perspective.name, streamId, model: stored, action: "none" as const, appliedEventIds: [] }
    const decoded = yield* stored === undefined ? initial : Effect.result(decode(stored))
    if (decoded._tag === "Failure") {
      // No event is at fault, but the pair cannot move: the failure is reported on the first event (cursor
      // Failed, retried with backoff) flagged `storedModelUnreadable`, so it consumes no attempts and nothing is
      // dead-lettered for it; the pair waits until the schema is fixed or the perspective rebuilt.
      return {
        ...empty,
        storedModelUnreadable: true as const,
        failure: schemaFailure(
          ordered[0],
          streamId,
          `the stored model no longer decodes with the perspective's schema (no event is at fault; fix the schema or rebuild the perspective): ${decoded.failure.message}`
        )
      }
    }
    // Fast path: encode once after the fold. Only if that fails is the fold redone encoding after every event
    // (folds are pure), so the event that produced the unencodable model is blamed and the prefix commits.
    let result: Folded<M> = fold(decoded.success, ordered)
    let encoded: unknown
    if (result.applied.length > 0) {
      const once = yield* Effect.result(encode(result.model))
      if (once._tag === "Success") encoded = once.success
      else {
        const checked = yield* foldEncodingEach(decoded.success, ordered, streamId)
        result = checked
        encoded = checked.encoded
      }
    }
    const last = result.applied.at(-1)
    if (last === undefined) return { ...empty, ...(result.failure === undefined ? {} : { failure: result.failure }) }
    return {
      ...empty,
      model: encoded,
      action: result.action,
      appliedEventIds: result.applied,
      lastEventId: last,
      ...(result.failure === undefined ? {} : { failure: result.failure })
    } satisfies RunOutcome
  })

  return { perspectiveName: perspective.name, eventTypes: perspective.eventTypes, run }
}
