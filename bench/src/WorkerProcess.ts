/**
 * Whizbang workers in their own processes (`src/workerChild.ts`), for scenarios a, d and v: the parent side. Each
 * worker is forked as plain JavaScript — `src/workerChild.ts` and the bench domain bundled by esbuild (tsx's own, so
 * no new dependency), packages left to `node_modules` — so its process carries no TypeScript loader (tsx's loader
 * thread alone adds about 80 MB of RSS). Falls back to running the source through tsx if esbuild cannot be loaded.
 *
 * `BENCH_WORKER_CPU_PROF=<dir>`: every worker writes a CPU profile there when it ends (profiling only).
 * `BENCH_WORKER_MAX_OLD_SPACE_MB=<n>`: workers run with `--max-old-space-size=<n>` (what a memory-capped deployment sets).
 */
import { type ChildProcess, fork } from "node:child_process"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import type { WorkerOptions } from "@whizbang/core"
import * as Whizbang from "./systems/Whizbang.js"

export interface Entry {
  readonly script: string
  readonly execArgv: ReadonlyArray<string>
  /** How the workers run: plain node, or through tsx (and why). */
  readonly how: string
}

const built = new Map<string, Promise<Entry>>()

/** Bundles a child script of `src/` (`workerChild` unless named) once per bench run. */
export const entry = (name = "workerChild"): Promise<Entry> => {
  const source = fileURLToPath(new URL(`./${name}.ts`, import.meta.url))
  const bundle = fileURLToPath(new URL(`../.worker-process/${name}.mjs`, import.meta.url))
  const cached = built.get(name)
  if (cached !== undefined) return cached
  const made = (async (): Promise<Entry> => {
    try {
      const require = createRequire(import.meta.url)
      const esbuild = createRequire(require.resolve("tsx"))("esbuild") as { build: (options: object) => Promise<unknown> }
      await esbuild.build({
        entryPoints: [source],
        bundle: true,
        platform: "node",
        format: "esm",
        target: "node20",
        packages: "external",
        // As tsx presents the same source to the bench's own process: a perspective's fingerprint hashes its
        // handlers' source text, and two presentations of one handler would re-register its fingerprint at every
        // start of a tenant's services in the other process.
        minifyWhitespace: true,
        outfile: bundle,
        logLevel: "error"
      })
      return { script: bundle, execArgv: [], how: "plain node (bundled with esbuild)" }
    } catch (error) {
      return { script: source, execArgv: ["--import", "tsx"], how: `through tsx (bundling failed: ${String(error)})` }
    }
  })()
  built.set(name, made)
  return made
}

type Message =
  | {
      readonly kind: "loaded" | "ready" | "memory"
      readonly at: number
      readonly rss: number
      readonly heap: number
      readonly heapTotal?: number
      readonly external?: number
      readonly applied: number
      readonly cpuMs?: number
    }
  | { readonly kind: "step"; readonly at: number; readonly applied: number; readonly cpuMs: number }
  | {
      readonly kind: "commits"
      readonly commits: ReadonlyArray<{ readonly perspective: string; readonly ids: ReadonlyArray<string>; readonly at: number }>
    }
  | { readonly kind: "log"; readonly at: number; readonly level: string; readonly message: string }
  | {
      readonly kind: "settled"
      readonly at: number
      readonly rss: number
      readonly heap: number
      readonly applied: number
      readonly cpuMs: number
      readonly started: number
      readonly lastCommit: number
    }

/** A worker process and what it reported so far (times are epoch ms, memory in bytes). */
export interface Worker {
  readonly child: ChildProcess
  /** `heap`: heap used; `heapTotal`: the heap V8 holds; `external`: buffers outside the heap (pg's socket data). */
  readonly memory: Array<{
    readonly at: number
    readonly rss: number
    readonly heap: number
    readonly heapTotal?: number
    readonly external?: number
  }>
  readonly steps: Array<{ readonly at: number; readonly cpuMs: number }>
  /** When started with `waitForGo`: modules loaded, waiting for {@link go}. */
  loaded: { readonly at: number; readonly cpuMs: number } | undefined
  ready: { readonly at: number; readonly rss: number; readonly cpuMs: number } | undefined
  /** The pairs committed so far, and when that count last grew. */
  progress: { readonly applied: number; readonly at: number }
  /** The answer to the last `settle`. */
  settled:
    | {
        readonly rss: number
        readonly heap: number
        readonly applied: number
        readonly cpuMs: number
        readonly started: number
        readonly lastCommit: number
      }
    | undefined
  exited: string | undefined
  /** What the worker logged (see `workerChild.ts` for the levels). */
  readonly logs: Array<{ readonly at: number; readonly level: string; readonly message: string }>
}

/** What else a worker runs and reports. */
export interface Extra {
  /** The bench's two perspectives (default), or with counter's version 2 beside them (scenario v). */
  readonly perspectives?: "v1" | "with-v2"
  /** Perspective keys whose commits are reported to {@link onCommits} (every 100 ms, with the hook's times). */
  readonly report?: ReadonlyArray<string>
  readonly onCommits?: (perspective: string, eventIds: ReadonlyArray<string>, at: number) => void
  /**
   * `builder`: the process replays history and runs no worker (`PgPerspectivePipeline.layerBuild`); ready once built.
   * Default `worker`.
   */
  readonly role?: "worker" | "builder"
  /** The pipeline's `versions` options (`PgPerspectiveVersions.Options`: `replay: "off"` beside a builder). */
  readonly versions?: Record<string, unknown>
}

/**
 * Forks a worker with these options; resolves once it polls, or — `waitForGo` — once its modules are loaded (start it
 * with {@link go}). `step`: report every `step` committed pairs (0: never).
 */
export const start = async (
  url: string,
  options: WorkerOptions.WorkerOptionsInput,
  step: number,
  waitForGo = false,
  extra: Extra = {}
): Promise<Worker> => {
  const how = await entry()
  const args = [
    url,
    Whizbang.schema,
    JSON.stringify(options),
    String(step),
    waitForGo ? "wait" : "now",
    extra.perspectives ?? "v1",
    (extra.report ?? []).join(",")
  ]
  return new Promise((resolve, reject) => {
    const child = fork(how.script, args, {
      execArgv: [
        ...how.execArgv,
        "--expose-gc",
        ...(process.env.BENCH_WORKER_MAX_OLD_SPACE_MB ? [`--max-old-space-size=${process.env.BENCH_WORKER_MAX_OLD_SPACE_MB}`] : []),
        ...(process.env.BENCH_WORKER_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_WORKER_CPU_PROF}`] : []),
        ...(process.env.BENCH_WORKER_NODE_FLAGS?.split(" ").filter((flag) => flag !== "") ?? [])
      ],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      env: {
        ...process.env,
        BENCH_WORKER_ROLE: extra.role ?? "worker",
        ...(extra.versions === undefined ? {} : { BENCH_VERSION_OPTIONS: JSON.stringify(extra.versions) })
      }
    })
    const worker: Worker = {
      child,
      memory: [],
      steps: [],
      loaded: undefined,
      ready: undefined,
      progress: { applied: 0, at: 0 },
      settled: undefined,
      exited: undefined,
      logs: []
    }
    child.on("message", (m: Message) => {
      if (m.kind === "step") worker.steps.push({ at: m.at, cpuMs: m.cpuMs })
      else if (m.kind === "commits") for (const c of m.commits) extra.onCommits?.(c.perspective, c.ids, c.at)
      else if (m.kind === "log") worker.logs.push({ at: m.at, level: m.level, message: m.message })
      else if (m.kind === "settled") worker.settled = m
      else if (m.kind === "loaded") {
        worker.loaded = { at: m.at, cpuMs: m.cpuMs ?? 0 }
        resolve(worker)
      } else {
        if (m.applied > worker.progress.applied) worker.progress = { applied: m.applied, at: m.at }
        worker.memory.push({ at: m.at, rss: m.rss, heap: m.heap, heapTotal: m.heapTotal ?? 0, external: m.external ?? 0 })
        if (m.kind === "ready") {
          worker.ready = { at: m.at, rss: m.rss, cpuMs: m.cpuMs ?? 0 }
          if (!waitForGo) resolve(worker)
        }
      }
    })
    child.on("exit", (code, signal) => {
      worker.exited = `worker process exited (${code ?? signal})`
      reject(new Error(worker.exited))
    })
  })
}

/** Starts a worker forked with `waitForGo`. */
export const go = (worker: Worker): void => {
  worker.child.send({ kind: "go" })
}

const poll = (done: () => boolean, fail: () => string | undefined) =>
  new Promise<void>((resolve, reject) => {
    const tick = () => {
      if (done()) return resolve()
      const why = fail()
      if (why !== undefined) return reject(new Error(why))
      setTimeout(tick, 5)
    }
    tick()
  })

/** Resolves once `until` holds; fails when a worker exits, or when none committed anything for `stallMs`. */
export const until = (workers: ReadonlyArray<Worker>, condition: () => boolean, stallMs: number, what: string) => {
  const started = Date.now()
  return poll(condition, () => {
    const exited = workers.find((w) => w.exited !== undefined)
    if (exited !== undefined) return exited.exited
    const progress = Math.max(started, ...workers.map((w) => w.progress.at))
    return Date.now() - progress > stallMs ? `worker process stalled: nothing committed for ${stallMs} ms (${what})` : undefined
  })
}

/** Asks for a full GC and a final report; resolves with it (undefined after 10 s without an answer). */
export const settle = async (worker: Worker): Promise<Worker["settled"]> => {
  worker.settled = undefined
  worker.child.send({ kind: "settle" })
  const started = Date.now()
  await poll(
    () => worker.settled !== undefined || Date.now() - started > 10_000,
    () => undefined
  )
  return worker.settled
}

/** Ends the worker (it exits on disconnect; killed if it has not after 5 s). */
export const stop = async (worker: Worker): Promise<void> => {
  const exited = new Promise<void>((resolve) => {
    if (worker.child.exitCode !== null || worker.child.signalCode !== null) resolve()
    else worker.child.once("exit", () => resolve())
  })
  if (worker.child.connected) worker.child.disconnect()
  const timer = setTimeout(() => worker.child.kill("SIGKILL"), 5_000)
  await exited
  clearTimeout(timer)
}
