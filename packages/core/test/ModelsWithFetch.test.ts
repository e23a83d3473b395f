import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema } from "effect"
import type * as CompletionStrategy from "../src/CompletionStrategy.js"
import * as EventDefinition from "../src/EventDefinition.js"
import * as EventRegistry from "../src/EventRegistry.js"
import { runCycle } from "../src/internal/workerCycle.js"
import * as Perspective from "../src/Perspective.js"
import * as PerspectiveRegistry from "../src/PerspectiveRegistry.js"
import * as PerspectiveRewinder from "../src/PerspectiveRewinder.js"
import type * as PerspectiveStore from "../src/PerspectiveStore.js"
import * as ProcessedEventCache from "../src/ProcessedEventCache.js"
import type * as WorkCoordinator from "../src/WorkCoordinator.js"
import * as WorkerOptions from "../src/WorkerOptions.js"

const Added = EventDefinition.make("Added", { payload: Schema.Struct({ n: Schema.Number }), streamId: () => "s" })
const events = EventRegistry.make([Added])
const total = Perspective.make({
  name: "total",
  events: [Added],
  model: Schema.Struct({ sum: Schema.Number }),
  initial: { sum: 0 },
  apply: { Added: (m, e) => ({ sum: m.sum + e.payload.n }) }
})

const row = (
  workId: string,
  streamId: string,
  n: number,
  storedModel?: { readonly data: unknown } | null
): WorkCoordinator.PendingEvent => ({
  workId,
  streamId,
  perspectiveName: "total",
  eventId: `0000000${workId}`,
  eventType: "Added",
  payload: { n },
  attempts: 0,
  cursorLastEventId: null,
  ...(storedModel === undefined ? {} : { storedModel })
})

// A coordinator that loads models with the fetch spares the worker the store round trip: the cycle applies on the
// model the fetch carried (a row, or none), and reads from the store only the pairs the fetch did not load.
describe("models loaded with the fetch", () => {
  it.effect("applies on the fetched model, and reads only the pairs without one from the store", () =>
    Effect.gen(function* () {
      const completed: Array<CompletionStrategy.PerspectiveCompletion> = []
      const storeReads: Array<ReadonlyArray<string>> = []
      const pending = [
        row("1", "loaded", 1, { data: { sum: 10 } }),
        row("2", "loaded", 2, { data: { sum: 10 } }),
        row("3", "no-row-yet", 5, null),
        row("4", "not-loaded", 7)
      ]
      const coordinator: WorkCoordinator.Shape = {
        claimWork: () => Effect.succeed([]),
        fetchPendingEvents: (request) => Effect.succeed(request.withModels === true ? pending : []),
        renewLeases: () => Effect.succeed(0),
        renewStreamLeases: () => Effect.succeed([]),
        reportCompletions: (cs) => Effect.sync(() => void completed.push(...cs)),
        reportFailures: () => Effect.void
      }
      const store = {
        getMany: (_name: string, ids: ReadonlyArray<string>) =>
          Effect.sync(() => {
            storeReads.push(ids)
            return new Map<string, PerspectiveStore.Row>([
              ["not-loaded", { id: "not-loaded", data: { sum: 100 }, metadata: {}, scope: {}, version: 3, createdAt: 0, updatedAt: 0 }]
            ])
          })
      } as unknown as PerspectiveStore.Shape
      const rewinder = yield* PerspectiveRewinder.PerspectiveRewinder
      const result = yield* runCycle(
        {
          instanceId: "i",
          coordinator,
          store,
          perspectives: yield* PerspectiveRegistry.make([total]),
          events,
          cache: yield* ProcessedEventCache.make({ retention: Duration.seconds(30) }),
          options: yield* WorkerOptions.decode({}),
          strategy: "batched",
          rewinder
        },
        ["loaded", "no-row-yet", "not-loaded"]
      )
      expect(result.processed.map((g) => g.streamId).sort()).toEqual(["loaded", "no-row-yet", "not-loaded"])
      expect(storeReads).toEqual([["not-loaded"]])
      const models = new Map(completed.map((c) => [c.streamId, c.model?.data]))
      expect(models).toEqual(
        new Map<string, unknown>([
          ["loaded", { sum: 13 }],
          ["no-row-yet", { sum: 5 }],
          ["not-loaded", { sum: 107 }]
        ])
      )
    }).pipe(Effect.provide(PerspectiveRewinder.layerUnsupported))
  )
})
