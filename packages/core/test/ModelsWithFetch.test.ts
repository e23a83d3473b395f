import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type * as CompletionStrategy from "../src/CompletionStrategy.js"
import { runCycle } from "../src/internal/workerCycle.js"
import * as PerspectiveRegistry from "../src/PerspectiveRegistry.js"
import * as PerspectiveRewinder from "../src/PerspectiveRewinder.js"
import type * as PerspectiveStore from "../src/PerspectiveStore.js"
import * as ProcessedEventCache from "../src/ProcessedEventCache.js"
import * as WorkerOptions from "../src/WorkerOptions.js"
import { coordinatorOf, events, row, total } from "./fixtures/sumCycle.js"

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
      const coordinator = coordinatorOf((request) => Effect.succeed(request.withModels === true ? pending : []), completed)
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
