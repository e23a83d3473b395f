import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema, Tracer } from "effect"
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

const row = (workId: string, streamId: string, n: number): WorkCoordinator.PendingEvent => ({
  workId,
  streamId,
  perspectiveName: "total",
  eventId: `0000000${workId}`,
  eventType: "Added",
  payload: { n },
  attempts: 0,
  cursorLastEventId: null,
  storedModel: null
})

/** One cycle over two streams (three events); returns the completions it reported. */
const cycle = Effect.gen(function* () {
  const completed: Array<CompletionStrategy.PerspectiveCompletion> = []
  const pending = [row("1", "a", 1), row("2", "a", 2), row("3", "b", 5)]
  const coordinator: WorkCoordinator.Shape = {
    claimWork: () => Effect.succeed([]),
    fetchPendingEvents: () => Effect.succeed(pending),
    renewLeases: () => Effect.succeed(0),
    renewStreamLeases: () => Effect.succeed([]),
    reportCompletions: (cs) => Effect.sync(() => void completed.push(...cs)),
    reportFailures: () => Effect.void
  }
  yield* runCycle(
    {
      instanceId: "i",
      coordinator,
      store: { getMany: () => Effect.succeed(new Map()) } as unknown as PerspectiveStore.Shape,
      perspectives: yield* PerspectiveRegistry.make([total]),
      events,
      cache: yield* ProcessedEventCache.make({ retention: Duration.seconds(30) }),
      options: yield* WorkerOptions.decode({}),
      strategy: "batched",
      rewinder: yield* PerspectiveRewinder.PerspectiveRewinder
    },
    ["a", "b"]
  )
  return completed.map((c) => ({ streamId: c.streamId, workIds: c.workIds, model: c.model?.data }))
}).pipe(Effect.provide(PerspectiveRewinder.layerUnsupported))

// The worker builds a `whizbang.apply` span per (stream, perspective) only when a tracing backend is installed:
// with Effect's native tracer nothing could observe it, and it cost about 5 µs per pair (bench/README.md).
describe("apply spans", () => {
  it.effect("a tracing backend gets one whizbang.apply span per applied pair; the cycle's outcome is the same without one", () =>
    Effect.gen(function* () {
      const started: Array<{ name: string; attributes: Record<string, unknown> }> = []
      const recording = Tracer.make({
        span: (options) => {
          const span = Tracer.nativeTracer.span(options)
          const attributes: Record<string, unknown> = {}
          started.push({ name: options.name, attributes })
          return new Proxy(span, {
            get: (target, key, receiver) =>
              key === "attribute"
                ? (name: string, value: unknown) => {
                    attributes[name] = value
                    target.attribute(name, value)
                  }
                : Reflect.get(target, key, receiver)
          })
        }
      })
      const untraced = yield* cycle
      const traced = yield* cycle.pipe(Effect.withTracer(recording))
      expect(traced).toEqual(untraced)
      expect(untraced.map((c) => c.model)).toEqual([{ sum: 3 }, { sum: 5 }])
      const applies = started.filter((s) => s.name === "whizbang.apply")
      expect(applies.map((s) => [s.attributes["whizbang.stream_id"], s.attributes["whizbang.events"]])).toEqual([
        ["a", 2],
        ["b", 1]
      ])
      expect(started.map((s) => s.name)).toContain("whizbang.cycle")
    })
  )
})
