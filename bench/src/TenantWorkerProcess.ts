/**
 * Scenario t's tenant worker processes (`src/tenantWorkerChild.ts`, `Whizbang.layerTenants`): the parent side. Each
 * is forked as plain JavaScript bundled by esbuild (as `WorkerProcess` does), waits for `go`, and reports its
 * progress every 200 ms.
 */
import { fork } from "node:child_process"
import type { Config } from "./tenantWorkerChild.js"
import * as WorkerProcess from "./WorkerProcess.js"

type Message =
  | { readonly kind: "loaded" | "ready"; readonly at: number }
  | {
      readonly kind: "status"
      readonly at: number
      readonly applied: number
      readonly started: number
      readonly lastCommit: number
      readonly active: number
      readonly rss: number
      readonly cpuMs: number
      /** The process's round trips to PostgreSQL so far. */
      readonly queries: number
      /** The longest event-loop delay since the previous status. */
      readonly loopMaxMs: number
    }
  | {
      readonly kind: "commits"
      readonly commits: ReadonlyArray<{ readonly perspective: string; readonly ids: ReadonlyArray<string>; readonly at: number }>
    }

export interface TenantWorker {
  readonly config: Config
  readonly child: ReturnType<typeof fork>
  ready: number | undefined
  /** The last status (times are epoch ms; 0: not yet). */
  status: { applied: number; started: number; lastCommit: number; active: number; rss: number; cpuMs: number; at: number; queries: number }
  /** The highest RSS reported. */
  peakRss: number
  /** Each status's longest event-loop delay, with its time (epoch ms). */
  readonly loop: Array<{ readonly at: number; readonly maxMs: number }>
  exited: string | undefined
  onCommits: ((perspective: string, ids: ReadonlyArray<string>, at: number) => void) | undefined
}

/** Forks a tenant worker; resolves once its modules are loaded (start it with {@link go}). */
export const start = async (config: Config): Promise<TenantWorker> => {
  const how = await WorkerProcess.entry("tenantWorkerChild")
  return new Promise((resolve, reject) => {
    const child = fork(how.script, [JSON.stringify(config)], {
      execArgv: [
        ...how.execArgv,
        ...(process.env.BENCH_WORKER_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_WORKER_CPU_PROF}`] : [])
      ],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    const worker: TenantWorker = {
      config,
      child,
      ready: undefined,
      status: { applied: 0, started: 0, lastCommit: 0, active: 0, rss: 0, cpuMs: 0, at: 0, queries: 0 },
      peakRss: 0,
      loop: [],
      exited: undefined,
      onCommits: undefined
    }
    child.on("message", (m: Message) => {
      if (m.kind === "loaded") resolve(worker)
      else if (m.kind === "ready") worker.ready = m.at
      else if (m.kind === "status") {
        worker.status = m
        worker.peakRss = Math.max(worker.peakRss, m.rss)
        worker.loop.push({ at: m.at, maxMs: m.loopMaxMs })
      } else if (m.kind === "commits") for (const c of m.commits) worker.onCommits?.(c.perspective, c.ids, c.at)
    })
    child.on("exit", (code, signal) => {
      worker.exited = `tenant worker process exited (${code ?? signal})`
      reject(new Error(worker.exited))
    })
  })
}

export const go = (worker: TenantWorker): void => void worker.child.send({ kind: "go" })

/** Asks the worker to report every commit (with its time) to `onCommits`, or to stop. */
export const report = (worker: TenantWorker, onCommits: TenantWorker["onCommits"]): void => {
  worker.onCommits = onCommits
  worker.child.send({ kind: "report", on: onCommits !== undefined })
}

/** Resolves once `condition` holds; fails when a worker exits, or after `timeoutMs` (naming `what`). */
export const until = (workers: ReadonlyArray<TenantWorker>, condition: () => boolean, timeoutMs: number, what: string) =>
  new Promise<void>((resolve, reject) => {
    const started = Date.now()
    const tick = () => {
      if (condition()) return resolve()
      const exited = workers.find((w) => w.exited !== undefined)
      if (exited !== undefined) return reject(new Error(exited.exited))
      if (Date.now() - started > timeoutMs) return reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`))
      setTimeout(tick, 10)
    }
    tick()
  })

/** Ends the worker (it exits on disconnect; killed if it has not after 5 s). */
export const stop = async (worker: TenantWorker): Promise<void> => {
  const exited = new Promise<void>((resolve) => {
    if (worker.child.exitCode !== null || worker.child.signalCode !== null) resolve()
    else worker.child.once("exit", () => resolve())
  })
  if (worker.child.connected) worker.child.disconnect()
  const timer = setTimeout(() => worker.child.kill("SIGKILL"), 5_000)
  await exited
  clearTimeout(timer)
}
