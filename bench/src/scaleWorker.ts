/**
 * The worker process of scenario d (scale): the bench domain's perspective worker, alone in its process, against
 * the parent's database, so its memory is the worker's only. Talks to the parent over IPC (`process.send`):
 * - `{ kind: "ready", at, rss, heap, cpuMs }` once it polls;
 * - `{ kind: "memory", at, rss, heap, applied }` every 100 ms (`process.memoryUsage()`, bytes; the pairs committed so far);
 * - `{ kind: "settled", at, rss, heap }` after a full GC, when the parent sends `{ kind: "settle" }`;
 * - `{ kind: "step", at, applied, cpuMs }` each time the count of committed (event, perspective) pairs crosses a
 *   multiple of `<step>` (`at`: the commit's time, epoch ms; `cpuMs`: this process's CPU time so far).
 * Usage (forked): tsx src/scaleWorker.ts <database url> <schema> <options json> <step>
 */
import { InstanceProvider, PerspectiveRewinder, PerspectiveWorker } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, SchemaReady } from "@whizbang/postgres"
import { Effect, Layer, References } from "effect"
import * as Domain from "./Domain.js"

const [url, schema, options, stepArg] = process.argv.slice(2)
const step = Number(stepArg)
const now = () => performance.timeOrigin + performance.now()
const send = (message: object) => process.send?.(message)
let applied = 0
const memory = () => {
  const m = process.memoryUsage()
  return { at: now(), rss: m.rss, heap: m.heapUsed, applied }
}
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

let nextStep = step
const layer = PgPerspectivePipeline.layer({
  events: Domain.registry,
  perspectives: Domain.perspectives,
  options: JSON.parse(options!),
  hooks: {
    onPerspectiveEventProcessed: (group) =>
      Effect.sync(() => {
        applied += group.eventIds.length
        while (applied >= nextStep) {
          send({ kind: "step", at: now(), applied, cpuMs: cpuMs() })
          nextStep += step
        }
      })
  }
}).pipe(
  Layer.provide(PerspectiveRewinder.layerUnsupported),
  Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "bench-scale-worker" })),
  Layer.provideMerge(SchemaReady.layerVerify),
  Layer.provideMerge(PgClient.layer({ url: url!, schema: schema!, maxConnections: 10, applicationName: "bench-scale-worker" })),
  Layer.orDie
)

// The parent ends the run by disconnecting (or dies): so does this process. `{ kind: "settle" }` asks for a
// full GC (with --expose-gc) and a memory report: what the worker still holds, not garbage awaiting collection.
process.on("disconnect", () => process.exit(0))
process.on("message", (m: { readonly kind?: string }) => {
  if (m.kind !== "settle") return
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  gc?.()
  send({ kind: "settled", ...memory() })
})
setInterval(() => send({ kind: "memory", ...memory() }), 100).unref()
Effect.runFork(
  Effect.scoped(
    Effect.gen(function* () {
      yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitPolls(1)
      send({ kind: "ready", ...memory(), cpuMs: cpuMs() })
      return yield* Effect.never
    }).pipe(Effect.provide(layer), Effect.provideService(References.MinimumLogLevel, "Error"))
  )
)
