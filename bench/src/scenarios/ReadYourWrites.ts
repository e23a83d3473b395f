/**
 * Scenario c: read-your-writes. At a steady rate, each "request" appends one event through the tracked event
 * store, waits with `PerspectiveSyncAwaiter.waitForEvents("summary", [id])`, then reads the summary row; a read
 * whose stream version is below the appended event's is stale (there must be none). The worker runs in this process
 * (woken through `WorkerSignals` -> tracker) or in a child process (settled by the `NOTIFY wh_processed` payload,
 * which names the events the completion committed). Resume latency = the waiter resumed - the summary's completion committed (the worker's hook),
 * over the waits that were parked (`Synced`; a `NoPendingEvents` answer came from the first check). A warm-up of a
 * tenth as many requests runs first at the same rate; its reads are checked, its timings not kept. Each row runs the
 * profile's repetitions (interleaved with the other rows, as in scenario b) and reports medians with min–max.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { InstanceProvider, PerspectiveRewinder, PerspectiveStore, type PerspectiveWorker, type WorkerOptions } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, SchemaReady } from "@whizbang/postgres"
import {
  PerspectiveSyncAwaiter,
  PgSyncInquiry,
  ScopedEventTracker,
  SyncEventTracker,
  SyncResult,
  TrackedEventStore,
  TrackedEventTypeRegistry,
  WorkerSignals
} from "@whizbang/sync"
import { Deferred, Effect, Layer, References, Semaphore } from "effect"
import * as Domain from "../Domain.js"
import type { Profile } from "../Profile.js"
import * as PG from "../Postgres.js"
import * as Stats from "../Stats.js"
import * as Whizbang from "../systems/Whizbang.js"
import type { Table } from "../Table.js"
import { tunedOptions } from "./Throughput.js"

export type Mode = "in-process" | "cross-process"

export interface Run {
  readonly mode: Mode
  readonly rate: number
  readonly iterations: number
  readonly achievedRate: number
  readonly stale: number
  readonly outcomes: Record<string, number>
  readonly resume: Stats.Latency
  /** Append -> wait returned, for scale. */
  readonly roundTrip: Stats.Latency
  /** The waiting process's event-loop delay while requests ran (ms): how long a ready fiber waited for the loop. */
  readonly eventLoopDelay: { readonly p50: number; readonly p99: number; readonly max: number }
  readonly problems: ReadonlyArray<string>
}

const now = () => performance.timeOrigin + performance.now()
const workerScript = fileURLToPath(new URL("../rywWorker.ts", import.meta.url))

/** Commit times by event id, awaited (a commit line may trail the wake-up). */
class Commits {
  private readonly times = new Map<string, number>()
  private readonly waiting = new Map<string, Deferred.Deferred<number>>()
  set(id: string, at: number) {
    this.times.set(id, at)
    const d = this.waiting.get(id)
    if (d) Deferred.doneUnsafe(d, Effect.succeed(at))
  }
  at(id: string) {
    return Effect.suspend(() => {
      const t = this.times.get(id)
      if (t !== undefined) return Effect.succeed(t)
      const d = this.waiting.get(id) ?? Deferred.makeUnsafe<number>()
      this.waiting.set(id, d)
      return Deferred.await(d)
    })
  }
}

const childWorker = (url: string, options: WorkerOptions.WorkerOptionsInput, commits: Commits) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const ready = yield* Deferred.make<void, Error>()
      const child = spawn(process.execPath, ["--import", "tsx", workerScript, url, Whizbang.schema, JSON.stringify(options)], {
        stdio: ["pipe", "pipe", "inherit"]
      })
      let buffered = ""
      child.stdout.on("data", (chunk: Buffer) => {
        buffered += chunk.toString()
        const lines = buffered.split("\n")
        buffered = lines.pop()!
        for (const line of lines) {
          if (line === "ready") Deferred.doneUnsafe(ready, Effect.void)
          const [tag, at, ids] = line.split(" ")
          if (tag === "commit" && ids !== undefined) for (const id of ids.split(",")) commits.set(id, Number(at))
        }
      })
      child.on("exit", (code) => Deferred.doneUnsafe(ready, Effect.fail(new Error(`ryw worker exited with ${code}`))))
      yield* Deferred.await(ready)
      return child
    }),
    (child) => Effect.sync(() => child.kill("SIGKILL"))
  )

const layers = (url: string, mode: Mode, options: WorkerOptions.WorkerOptionsInput, commits: Commits) => {
  const config = { events: Domain.registry, perspectives: Domain.perspectives, options }
  const timing: PerspectiveWorker.Hooks = {
    onPerspectiveEventProcessed: (group) =>
      Effect.sync(() => {
        if (group.perspectiveName !== "summary") return
        const at = now()
        for (const id of group.eventIds) commits.set(id, at)
      })
  }
  const pipeline =
    mode === "in-process"
      ? Layer.unwrap(Effect.map(WorkerSignals.hooks(timing), (hooks) => PgPerspectivePipeline.layer({ ...config, hooks }))).pipe(
          Layer.provide(PerspectiveRewinder.layerUnsupported)
        )
      : PgPerspectivePipeline.layerPorts(config)
  return pipeline.pipe(
    Layer.provideMerge(PerspectiveSyncAwaiter.layer),
    Layer.provideMerge(PgSyncInquiry.layer({ perspectives: Domain.perspectives })),
    Layer.provideMerge(TrackedEventTypeRegistry.layerFromPerspectives(Domain.perspectives)),
    Layer.provideMerge(SyncEventTracker.layer),
    Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "bench-ryw" })),
    Layer.provideMerge(SchemaReady.layer),
    Layer.provideMerge(PgClient.layer({ url, schema: Whizbang.schema, maxConnections: 20, applicationName: "bench-ryw" })),
    Layer.orDie
  )
}

export const once = (serverUrl: string, mode: Mode, rate: number, iterations: number, streams: number) =>
  PG.withFreshDatabase(serverUrl, "ryw", async (url) => {
    await Whizbang.migrate(url)
    const commits = new Commits()
    const options = tunedOptions
    const program = Effect.gen(function* () {
      if (mode === "cross-process") yield* childWorker(url, options, commits)
      const store = yield* TrackedEventStore.make
      const awaiter = yield* PerspectiveSyncAwaiter.PerspectiveSyncAwaiter
      const models = yield* PerspectiveStore.PerspectiveStore
      const limit = yield* Semaphore.make(256)
      const outcomes: Record<string, number> = {}
      const resume: Array<number> = []
      const roundTrip: Array<number> = []
      let stale = 0
      let failed = 0
      // The first requests run the same way but are not measured (JIT, first statements, the child's first cycles):
      // a tenth of the measured ones, as scenario b drops the first tenth of its window. Their reads still count
      // as stale or not.
      const warmUp = Math.ceil(iterations / 10)
      const total = warmUp + iterations
      const request = (k: number) =>
        ScopedEventTracker.withScope(
          Effect.gen(function* () {
            const stream = Domain.streamId(k % streams)
            const seq = Math.floor(k / streams) + 1
            const started = now()
            const appended = yield* store.append(stream, [Domain.Deposited.make({ accountId: stream, amount: Domain.amountOf(k), seq })])
            const id = appended.events[0]!.eventId
            const result = yield* awaiter.waitForEvents("summary", [id], { timeout: "30 seconds" })
            const resumed = now()
            const measured = k >= warmUp
            if (measured) outcomes[result._tag] = (outcomes[result._tag] ?? 0) + 1
            // The row's stream version, not the payload's `seq`: two requests on one stream may commit out of order.
            const row = yield* models.getById("summary", stream)
            const version = row._tag === "Some" ? row.value.version : 0
            if (!SyncResult.isFresh(result) || version < appended.events[0]!.streamVersion) stale++
            if (!measured) return
            roundTrip.push(resumed - started)
            // Resume latency only for waits that waited: a NoPendingEvents answer was never parked.
            if (result._tag === "Synced") resume.push(resumed - (yield* commits.at(id)))
          })
        ).pipe(
          Effect.catchCause(() => Effect.sync(() => void failed++)),
          limit.withPermits(1)
        )
      const loopDelay = monitorEventLoopDelay({ resolution: 1 })
      const first = now()
      let start = first
      // A count, not the fibers: a request's fiber is garbage once it ended, as in a service.
      const allDone = yield* Deferred.make<void>()
      let done = 0
      const counted = (k: number) =>
        Effect.ensuring(
          request(k),
          Effect.suspend(() => (++done === total ? Deferred.succeed(allDone, undefined) : Effect.void))
        )
      for (let k = 0; k < total; k++) {
        const due = first + (k * 1000) / rate
        if (k === warmUp) {
          start = due
          loopDelay.enable()
        }
        const wait = due - now()
        if (wait > 0) yield* Effect.sleep(`${wait} millis`)
        yield* Effect.forkChild(counted(k))
      }
      const sent = now()
      yield* Deferred.await(allDone)
      loopDelay.disable()
      const problems: Array<string> = []
      if (failed > 0) problems.push(`${failed} requests failed`)
      if (stale > 0) problems.push(`${stale} stale reads`)
      return {
        mode,
        rate,
        iterations,
        achievedRate: iterations / ((sent - start) / 1000),
        stale,
        outcomes,
        resume: Stats.latency(resume),
        roundTrip: Stats.latency(roundTrip),
        eventLoopDelay: { p50: loopDelay.percentile(50) / 1e6, p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
        problems
      } satisfies Run
    })
    return Effect.runPromise(
      Effect.scoped(program).pipe(
        Effect.provide(layers(url, mode, options, commits)),
        Effect.provideService(References.MinimumLogLevel, "Error")
      )
    )
  })

/**
 * One (worker placement, rate) over the profile's repetitions: medians with min–max; `achievedRate` the median,
 * `stale` (must be 0) and `outcomes` over every repetition.
 */
export interface Summary extends Pick<Run, "mode" | "rate" | "iterations" | "achievedRate" | "stale" | "outcomes"> {
  readonly resumeP50: Stats.Spread
  readonly resumeP99: Stats.Spread
  readonly roundTripP50: Stats.Spread
  readonly roundTripP99: Stats.Spread
  readonly eventLoopDelayP99: Stats.Spread
}

export interface Result {
  readonly runs: ReadonlyArray<Run>
  readonly summary: ReadonlyArray<Summary>
}

export const run = async (serverUrl: string, profile: Profile, log: (s: string) => void): Promise<Result> => {
  const runs: Array<Run> = []
  const { iterations, modes, rates, streams } = profile.readYourWrites
  for (let rep = 1; rep <= profile.repetitions; rep++) {
    for (const mode of modes) {
      for (const rate of rates) {
        const r = await once(serverUrl, mode, rate, iterations, streams)
        log(
          `read-your-writes ${mode} @${rate}/s (rep ${rep}): ${r.iterations} requests, stale ${r.stale}, resume p50 ${Stats.fmt(r.resume.p50, 2)} ms p99 ${Stats.fmt(r.resume.p99, 2)} ms, event-loop delay p99 ${Stats.fmt(r.eventLoopDelay.p99, 1)} ms`
        )
        runs.push(r)
      }
    }
  }
  const summary = modes.flatMap((mode) =>
    rates.map((rate): Summary => {
      const mine = runs.filter((r) => r.mode === mode && r.rate === rate)
      const outcomes: Record<string, number> = {}
      for (const r of mine) for (const [k, v] of Object.entries(r.outcomes)) outcomes[k] = (outcomes[k] ?? 0) + v
      return {
        mode,
        rate,
        iterations,
        achievedRate: Stats.median(mine.map((r) => r.achievedRate)),
        stale: mine.reduce((n, r) => n + r.stale, 0),
        outcomes,
        resumeP50: Stats.spread(mine.map((r) => r.resume.p50)),
        resumeP99: Stats.spread(mine.map((r) => r.resume.p99)),
        roundTripP50: Stats.spread(mine.map((r) => r.roundTrip.p50)),
        roundTripP99: Stats.spread(mine.map((r) => r.roundTrip.p99)),
        eventLoopDelayP99: Stats.spread(mine.map((r) => r.eventLoopDelay.p99))
      }
    })
  )
  return { runs, summary }
}

export const table = (result: Result, profile: Profile): Table => ({
  title: `c. Read-your-writes: append -> wait -> read (${profile.readYourWrites.iterations} requests per row and repetition; resume = waiter resumed - completion committed, over Synced waits, ms; median (min–max) of ${profile.repetitions})`,
  head: [
    "worker",
    "target/s",
    "achieved/s",
    "stale reads",
    "outcomes",
    "resume p50",
    "resume p99",
    "append->resumed p50",
    "p99",
    "event-loop delay p99"
  ],
  rows: result.summary.map((s) => [
    s.mode,
    Stats.fmt(s.rate),
    Stats.fmt(s.achievedRate),
    String(s.stale),
    Object.entries(s.outcomes)
      .map(([k, v]) => `${k} ${v}`)
      .join(", "),
    Stats.fmtSpread(s.resumeP50, 2),
    Stats.fmtSpread(s.resumeP99, 2),
    Stats.fmtSpread(s.roundTripP50, 1),
    Stats.fmtSpread(s.roundTripP99, 1),
    Stats.fmtSpread(s.eventLoopDelayP99, 1)
  ]),
  notes: [
    "in-process: the worker runs in the waiting process and wakes it through WorkerSignals -> SyncEventTracker;",
    "cross-process: the worker is a child process; the waiter is settled by the NOTIFY wh_processed payload (the events the completion committed), no query.",
    "event-loop delay: how late the waiting process's event loop ran a ready callback (monitorEventLoopDelay) while requests ran.",
    "stale reads and outcomes: over every repetition.",
    `worker options: ${JSON.stringify(tunedOptions)}`
  ]
})
