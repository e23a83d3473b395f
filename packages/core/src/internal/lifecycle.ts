/**
 * Fires lifecycle receptors for committed events: `PostPerspective` per (event, perspective) right after the
 * commit, then — once every perspective of an event is done with it (as the LifecycleStore sees it) —
 * `PostAllPerspectives` and `PostLifecycle` once per event when every perspective applied it, or `DeadLettered`
 * (with `DeadLetteredBy`) when one dead-lettered it: never a success for an event a read model lacks. Each envelope runs under its own security context.
 * A failing receptor is logged with its name and the event, and never stops the worker.
 */
import { Effect, type Scope } from "effect"
import type { Envelope, EventMetadata, EventScope } from "../Envelope.js"
import type * as EventRegistry from "../EventRegistry.js"
import { completionStages, DeadLetteredBy, Inline, type LifecycleStage } from "../LifecycleStage.js"
import type * as LifecycleStore from "../LifecycleStore.js"
import { parseKey } from "../Perspective.js"
import { type Receptor as ReceptorModel, runGated } from "../Receptor.js"
import * as SecurityContext from "../SecurityContext.js"
import type { ProcessedGroup } from "./workerCycle.js"

export interface LifecycleDeps {
  readonly receptors: ReadonlyArray<ReceptorModel>
  readonly store: LifecycleStore.Shape
  readonly events: EventRegistry.EventRegistry
  readonly instanceId: string
  readonly reclaimAfterSeconds: number
  readonly scope: Scope.Scope
}

/** A receptor names a perspective by its base name (or any version's key): it fires for whichever version fires. */
const sameBase = (a: string, b: string) => a === b || parseKey(a).baseName === parseKey(b).baseName

const invoke = (deps: LifecycleDeps, receptor: ReceptorModel, envelope: Envelope) => {
  // Through the sync gate: a receptor declaring awaitPerspectiveSync runs after the perspective has the event.
  const run = SecurityContext.withEnvelope(envelope, runGated(receptor, envelope)).pipe(
    Effect.catchCause((cause) =>
      Effect.logWarning(`receptor ${receptor.name} failed on ${envelope.eventType} ${envelope.eventId}`, cause).pipe(
        Effect.annotateLogs({ receptor: receptor.name, eventId: envelope.eventId, streamId: envelope.streamId })
      )
    ),
    Effect.asVoid
  )
  return receptor.mode === "detached" ? Effect.asVoid(Effect.forkIn(run, deps.scope)) : Effect.provideService(run, Inline, true)
}

export const fireStage = (deps: LifecycleDeps, stage: LifecycleStage, envelope: Envelope, perspectiveName?: string): Effect.Effect<void> =>
  Effect.forEach(
    deps.receptors.filter(
      (r) =>
        r.stage === stage &&
        r.handles.includes(envelope.eventType) &&
        (r.perspective === undefined || (perspectiveName !== undefined && sameBase(r.perspective, perspectiveName)))
    ),
    (receptor) => invoke(deps, receptor, envelope),
    { discard: true }
  )

/** True when some receptor needs the end-of-processing stages (so the store is worth asking). */
export const needsCompletionStages = (receptors: ReadonlyArray<ReceptorModel>): boolean =>
  receptors.some((r) => r.stage !== undefined && completionStages.includes(r.stage))

const toEnvelope = (deps: LifecycleDeps, e: LifecycleStore.CompletedEvent) =>
  deps.events.decode(e.eventType, e.payload, e.eventId).pipe(
    Effect.map(
      (payload): Envelope => ({
        eventId: e.eventId,
        streamId: e.streamId,
        streamVersion: e.streamVersion,
        eventType: e.eventType,
        payload,
        metadata: e.metadata as EventMetadata,
        scope: (e.scope ?? {}) as EventScope
      })
    )
  )

/** Claims completed lifecycles (of `eventIds`, or every orphan when absent), fires their stages, forgets them. */
export const completeLifecycles = (deps: LifecycleDeps, eventIds?: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    if (!needsCompletionStages(deps.receptors) || (eventIds !== undefined && eventIds.length === 0)) return 0
    const completed = yield* deps.store.claimCompleted({
      instanceId: deps.instanceId,
      reclaimAfterSeconds: deps.reclaimAfterSeconds,
      ...(eventIds === undefined ? {} : { eventIds })
    })
    for (const event of completed) {
      const envelope = yield* Effect.result(toEnvelope(deps, event))
      if (envelope._tag === "Failure") {
        yield* Effect.logWarning(`lifecycle of ${event.eventType} ${event.eventId} skipped: ${envelope.failure.message}`)
        continue
      }
      const deadLetteredBy = event.deadLetteredBy ?? []
      if (deadLetteredBy.length > 0) {
        yield* Effect.provideService(fireStage(deps, "DeadLettered", envelope.success), DeadLetteredBy, deadLetteredBy)
        continue
      }
      yield* fireStage(deps, "PostAllPerspectives", envelope.success)
      yield* fireStage(deps, "PostLifecycle", envelope.success)
    }
    if (completed.length > 0) yield* deps.store.complete(completed.map((e) => e.eventId))
    return completed.length
  })

/** After a committed cycle: PostPerspective for each applied event, then the lifecycles that completed. */
export const afterCycle = (deps: LifecycleDeps, processed: ReadonlyArray<ProcessedGroup>, otherEventIds: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    if (deps.receptors.length === 0) return
    for (const group of processed) {
      for (const envelope of group.firing ?? group.envelopes) yield* fireStage(deps, "PostPerspective", envelope, group.perspectiveName)
    }
    yield* completeLifecycles(deps, [...new Set([...processed.flatMap((g) => g.eventIds), ...otherEventIds])])
  })
