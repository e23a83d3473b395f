/**
 * A Whizbang worker alone in its process (scenarios a, d and v): the bench domain's `PgPerspectivePipeline` against the
 * parent's database, so its CPU and memory are the worker's only, and several of them use several cores. Talks to the
 * parent over IPC (`process.send`):
 * - `{ kind: "ready", at, rss, heap, applied, cpuMs }` once it polls;
 * - `{ kind: "memory", at, rss, heap, heapTotal, external, applied }` every 100 ms (`process.memoryUsage()`, bytes;
 *   pairs committed so far);
 * - `{ kind: "step", at, applied, cpuMs }` each time the count of committed (event, perspective) pairs crosses a
 *   multiple of `<step>` (`at`: that commit's time, epoch ms; `cpuMs`: this process's CPU time so far; 0: never);
 * - `{ kind: "settled", at, rss, heap, applied, cpuMs, started, lastCommit }` when the parent sends
 *   `{ kind: "settle" }`: after a full GC (with --expose-gc), what the worker still holds, with the time work
 *   processing first started (`onWorkProcessingStarted`) and the time of its last commit (epoch ms; 0: none).
 * - `{ kind: "loaded", at, rss, heap, applied, cpuMs }` first, when started with "wait": the worker then starts on
 *   `{ kind: "go" }` (so that several start together).
 * - `{ kind: "commits", commits: [{ perspective, ids, at }] }` with each memory report: the commits (time of the
 *   hook, after the completion committed) of the perspective keys named by <report>, since the last report;
 * - `{ kind: "log", at, level, message }` for every log line at or above the minimum level (Error; Info with the
 *   perspective set "with-v2", so that the version build's progress and cutover lines reach the parent). Warnings
 *   and errors are also printed to stderr.
 * Usage (forked): node workerChild.mjs <database url> <schema> <options json> <step> <wait|now> [v1|with-v2] [report keys, comma-separated]
 */
import { InstanceProvider, PerspectiveRewinder, PerspectiveWorker } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, SchemaReady } from "@whizbang/postgres"
import { Cause, Effect, Layer, Logger, LogLevel, References } from "effect"
import { appendFileSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { monitorEventLoopDelay } from "node:perf_hooks"
import * as Domain from "./Domain.js"

const [url, schema, options, stepArg, waitForGo, perspectiveSet, reportArg] = process.argv.slice(2)
const step = Number(stepArg)
const withV2 = perspectiveSet === "with-v2"
const report = new Set((reportArg ?? "").split(",").filter((k) => k !== ""))
let commits: Array<{ readonly perspective: string; readonly ids: ReadonlyArray<string>; readonly at: number }> = []
const now = () => performance.timeOrigin + performance.now()
// With a callback, a send after the parent disconnected (the end of a run) is dropped instead of an EPIPE crash.
const send = (message: object) => {
  if (process.connected) process.send?.(message, undefined, {}, () => undefined)
}
let applied = 0
let started = 0
let lastCommit = 0
const memory = () => {
  const m = process.memoryUsage()
  return { at: now(), rss: m.rss, heap: m.heapUsed, heapTotal: m.heapTotal, external: m.external, applied }
}
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

let nextStep = step > 0 ? step : Number.POSITIVE_INFINITY
// `BENCH_WORKER_ROLE=builder` (`WorkerProcess.Extra.role`): a builder — replays history, runs no worker.
const builder = process.env.BENCH_WORKER_ROLE === "builder"
const pipelineConfig: PgPerspectivePipeline.Config = {
  events: Domain.registry,
  perspectives: withV2 ? Domain.perspectivesWithV2 : Domain.perspectives,
  options: JSON.parse(options!),
  // `BENCH_VERSION_OPTIONS=<json>` (diagnosis only): the replay's options (`replayChunkEvents`, `replayConcurrency`, ...).
  ...(process.env.BENCH_VERSION_OPTIONS ? { versions: JSON.parse(process.env.BENCH_VERSION_OPTIONS) } : {}),
  hooks: {
    onWorkProcessingStarted: () =>
      Effect.sync(() => {
        if (started === 0) started = now()
      }),
    onPerspectiveEventProcessed: (group) =>
      Effect.sync(() => {
        applied += group.eventIds.length
        lastCommit = now()
        if (report.has(group.perspectiveName)) commits.push({ perspective: group.perspectiveName, ids: group.eventIds, at: lastCommit })
        while (applied >= nextStep) {
          send({ kind: "step", at: lastCommit, applied, cpuMs: cpuMs() })
          nextStep += step
        }
      })
  }
}
const infrastructure = <A, E, R>(pipeline: Layer.Layer<A, E, R>) =>
  pipeline.pipe(
    Layer.provide(PerspectiveRewinder.layerUnsupported),
    Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "bench-worker-process" })),
    Layer.provideMerge(SchemaReady.layerVerify),
    Layer.provideMerge(PgClient.layer({ url: url!, schema: schema!, maxConnections: 10, applicationName: "bench-worker-process" })),
    Layer.orDie
  )

// `BENCH_LOOP_TRACE=<file>` (diagnosis only): every 100 ms, the wall time, the event loop's longest delay and this
// process's CPU time over the interval, appended to the file.
const loopTrace = process.env.BENCH_LOOP_TRACE
if (loopTrace !== undefined) {
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  let cpu = process.cpuUsage()
  setInterval(() => {
    const c = process.cpuUsage(cpu)
    cpu = process.cpuUsage()
    appendFileSync(
      loopTrace,
      `${(performance.timeOrigin + performance.now()).toFixed(1)} ${(delay.max / 1e6).toFixed(1)} ${((c.user + c.system) / 1000).toFixed(1)}\n`
    )
    delay.reset()
  }, 100).unref()
}
// The parent ends the run by disconnecting (or dies): so does this process.
process.on("disconnect", () => process.exit(0))
// `BENCH_WORKER_HEAP_PROF=<dir>` (profiling only): V8's sampling heap profiler over the whole run, counting objects
// that were collected too (so it shows where the allocations come from), written as a .heapprofile on "settle".
const heapProfile = process.env.BENCH_WORKER_HEAP_PROF
const heapSession = heapProfile === undefined ? undefined : new Session()
if (heapSession !== undefined) {
  heapSession.connect()
  heapSession.post("HeapProfiler.startSampling", {
    samplingInterval: 16384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true
  } as object)
}
const writeHeapProfile = () =>
  new Promise<void>((resolve) => {
    if (heapSession === undefined) return resolve()
    heapSession.post("HeapProfiler.stopSampling", (error, result) => {
      if (error === null) writeFileSync(`${heapProfile}/worker-${process.pid}.heapprofile`, JSON.stringify(result.profile))
      resolve()
    })
  })
process.on("message", async (m: { readonly kind?: string }) => {
  if (m.kind !== "settle") return
  await writeHeapProfile()
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  gc?.()
  send({ kind: "settled", ...memory(), cpuMs: cpuMs(), started, lastCommit })
})
setInterval(() => {
  send({ kind: "memory", ...memory() })
  if (commits.length > 0) {
    send({ kind: "commits", commits })
    commits = []
  }
}, 100).unref()
const logger = Logger.make((o) => {
  const message = (Array.isArray(o.message) ? o.message : [o.message]).map(String).join(" ")
  send({ kind: "log", at: o.date.getTime(), level: o.logLevel, message })
  if (LogLevel.isGreaterThanOrEqualTo(o.logLevel, "Warn")) {
    console.error(`[worker ${o.logLevel}] ${message}${o.cause.reasons.length > 0 ? `\n${Cause.pretty(o.cause)}` : ""}`)
  }
})
const run = () =>
  Effect.runFork(
    Effect.scoped(
      (builder
        ? Effect.andThen(
            Effect.sync(() => send({ kind: "ready", ...memory(), cpuMs: cpuMs() })),
            Effect.never
          ).pipe(Effect.provide(infrastructure(PgPerspectivePipeline.layerBuild(pipelineConfig))))
        : Effect.gen(function* () {
            yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitPolls(1)
            send({ kind: "ready", ...memory(), cpuMs: cpuMs() })
            return yield* Effect.never
          }).pipe(Effect.provide(infrastructure(PgPerspectivePipeline.layer(pipelineConfig))))
      ).pipe(Effect.provide(Logger.layer([logger])), Effect.provideService(References.MinimumLogLevel, withV2 ? "Info" : "Error"))
    )
  )
// "wait": modules loaded, the worker starts on `{ kind: "go" }` (so several start together); otherwise at once.
if (waitForGo === "wait") {
  process.on("message", (m: { readonly kind?: string }) => {
    if (m.kind === "go") run()
  })
  send({ kind: "loaded", ...memory(), cpuMs: cpuMs() })
} else run()
