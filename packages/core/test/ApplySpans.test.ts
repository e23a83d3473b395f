import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Tracer } from "effect"
import type * as CompletionStrategy from "../src/CompletionStrategy.js"
import { runCycle } from "../src/internal/workerCycle.js"
import * as PerspectiveRegistry from "../src/PerspectiveRegistry.js"
import * as PerspectiveRewinder from "../src/PerspectiveRewinder.js"
import type * as PerspectiveStore from "../src/PerspectiveStore.js"
import * as ProcessedEventCache from "../src/ProcessedEventCache.js"
import * as WorkerOptions from "../src/WorkerOptions.js"
import { coordinatorOf, events, row, total } from "./fixtures/sumCycle.js"

/** One cycle over two streams (three events); returns the completions it reported. */
const cycle = Effect.gen(function* () {
  const completed: Array<CompletionStrategy.PerspectiveCompletion> = []
  const pending = [row("1", "a", 1, null), row("2", "a", 2, null), row("3", "b", 5, null)]
  const coordinator = coordinatorOf(() => Effect.succeed(pending), completed)
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
