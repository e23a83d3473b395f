/**
 * A Whizbang worker alone in its process (scenarios a and d): the bench domain's `PgPerspectivePipeline` against the
 * parent's database, so its CPU and memory are the worker's only, and several of them use several cores. Talks to the
 * parent over IPC (`process.send`):
 * - `{ kind: "ready", at, rss, heap, applied, cpuMs }` once it polls;
 * - `{ kind: "memory", at, rss, heap, applied }` every 100 ms (`process.memoryUsage()`, bytes; pairs committed so far);
 * - `{ kind: "step", at, applied, cpuMs }` each time the count of committed (event, perspective) pairs crosses a
 *   multiple of `<step>` (`at`: that commit's time, epoch ms; `cpuMs`: this process's CPU time so far; 0: never);
 * - `{ kind: "settled", at, rss, heap, applied, cpuMs, started, lastCommit }` when the parent sends
 *   `{ kind: "settle" }`: after a full GC (with --expose-gc), what the worker still holds, with the time work
 *   processing first started (`onWorkProcessingStarted`) and the time of its last commit (epoch ms; 0: none).
 * - `{ kind: "loaded", at, rss, heap, applied, cpuMs }` first, when started with "wait": the worker then starts on
 *   `{ kind: "go" }` (so that several start together).
 * Usage (forked): node workerChild.mjs <database url> <schema> <options json> <step> [wait]
 */
import { InstanceProvider, PerspectiveRewinder, PerspectiveWorker } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, SchemaReady } from "@whizbang/postgres"
import { Effect, Layer, References } from "effect"
import * as Domain from "./Domain.js"

const [url, schema, options, stepArg, waitForGo] = process.argv.slice(2)
const step = Number(stepArg)
const now = () => performance.timeOrigin + performance.now()
const send = (message: object) => process.send?.(message)
let applied = 0
let started = 0
let lastCommit = 0
const memory = () => {
  const m = process.memoryUsage()
  return { at: now(), rss: m.rss, heap: m.heapUsed, applied }
}
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

let nextStep = step > 0 ? step : Number.POSITIVE_INFINITY
const layer = PgPerspectivePipeline.layer({
  events: Domain.registry,
  perspectives: Domain.perspectives,
  options: JSON.parse(options!),
  hooks: {
    onWorkProcessingStarted: () =>
      Effect.sync(() => {
        if (started === 0) started = now()
      }),
    onPerspectiveEventProcessed: (group) =>
      Effect.sync(() => {
        applied += group.eventIds.length
        lastCommit = now()
        while (applied >= nextStep) {
          send({ kind: "step", at: lastCommit, applied, cpuMs: cpuMs() })
          nextStep += step
        }
      })
  }
}).pipe(
  Layer.provide(PerspectiveRewinder.layerUnsupported),
  Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "bench-worker-process" })),
  Layer.provideMerge(SchemaReady.layerVerify),
  Layer.provideMerge(PgClient.layer({ url: url!, schema: schema!, maxConnections: 10, applicationName: "bench-worker-process" })),
  Layer.orDie
)

// The parent ends the run by disconnecting (or dies): so does this process.
process.on("disconnect", () => process.exit(0))
process.on("message", (m: { readonly kind?: string }) => {
  if (m.kind !== "settle") return
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  gc?.()
  send({ kind: "settled", ...memory(), cpuMs: cpuMs(), started, lastCommit })
})
setInterval(() => send({ kind: "memory", ...memory() }), 100).unref()
const run = () =>
  Effect.runFork(
    Effect.scoped(
      Effect.gen(function* () {
        yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitPolls(1)
        send({ kind: "ready", ...memory(), cpuMs: cpuMs() })
        return yield* Effect.never
      }).pipe(Effect.provide(layer), Effect.provideService(References.MinimumLogLevel, "Error"))
    )
  )
// "wait": modules loaded, the worker starts on `{ kind: "go" }` (so several start together); otherwise at once.
if (waitForGo === "wait") {
  process.on("message", (m: { readonly kind?: string }) => {
    if (m.kind === "go") run()
  })
  send({ kind: "loaded", ...memory(), cpuMs: cpuMs() })
} else run()
