/**
 * A tenant worker process (scenario t): `Whizbang.layerTenants` — the front door a multi-tenant service runs — over
 * the bench domain, serving every tenant of the parent's database with work. Talks to the parent over IPC
 * (`process.send`), as `workerChild.ts` does:
 * - `{ kind: "loaded" }` once its modules are loaded; it builds the layer on `{ kind: "go" }`;
 * - `{ kind: "ready", at }` once the layer is built (the fleet listens and has swept the catalog);
 * - `{ kind: "status", at, applied, started, lastCommit, active, rss, cpuMs, loopMaxMs, queries }` every 200 ms:
 *   committed (event, perspective) pairs, the first `onWorkProcessingStarted` and the last commit (epoch ms; 0: none),
 *   how many tenants' services run in the process (`Tenants.active`), the longest event-loop delay since the last
 *   status, and the process's round trips to PostgreSQL so far (every client of it: `QueryCounter.installTotal`);
 * - `{ kind: "commits", commits: [{ perspective, ids, at }] }` with each status while the parent asked for them
 *   (`{ kind: "report", on: true }`): every commit's time (the hook, after the completion committed).
 * Warnings and errors are printed to stderr.
 * Usage (forked): node tenantWorkerChild.mjs <config json>
 */
import { Cause, type Duration, Effect, Logger, type LogLevel, References } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { inspect } from "node:util"
import { Tenants, Whizbang } from "whizbang"
import * as Domain from "./Domain.js"
import * as QueryCounter from "./QueryCounter.js"

export interface Config {
  readonly url: string
  readonly schema: string
  readonly applicationName: string
  readonly maxConnections: number
  /** Worker options (JSON: durations as strings). */
  readonly options: Record<string, unknown>
  readonly idleTimeToLive: string
  readonly idleCheck: string
}

const config = JSON.parse(process.argv[2]!) as Config
const now = () => performance.timeOrigin + performance.now()
const send = (message: object) => {
  if (process.connected) process.send?.(message, undefined, {}, () => undefined)
}
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
// How long the event loop was held up: the longest delay since the last status (its tenants' work all runs on it).
const loopDelay = monitorEventLoopDelay({ resolution: 10 })
loopDelay.enable()
let applied = 0
let started = 0
let lastCommit = 0
let reporting = false
let commits: Array<{ readonly perspective: string; readonly ids: ReadonlyArray<string>; readonly at: number }> = []

const layer = Whizbang.layerTenants({
  databaseUrl: config.url,
  schema: config.schema,
  serviceName: "bench-tenants",
  applicationName: config.applicationName,
  maxConnections: config.maxConnections,
  events: Domain.registry,
  perspectives: Domain.perspectives,
  options: config.options,
  watchdog: { interval: null },
  hooks: {
    onWorkProcessingStarted: () =>
      Effect.sync(() => {
        if (started === 0) started = now()
      }),
    onPerspectiveEventProcessed: (group) =>
      Effect.sync(() => {
        applied += group.eventIds.length
        lastCommit = now()
        if (reporting) commits.push({ perspective: group.perspectiveName, ids: group.eventIds, at: lastCommit })
      })
  },
  tenants: { idleTimeToLive: config.idleTimeToLive as Duration.Input, idleCheck: config.idleCheck as Duration.Input }
})

/** A log annotation: causes pretty-printed, anything else inspected. */
const describe = (value: unknown): string => {
  if (Cause.isCause(value)) return Cause.pretty(value)
  if (typeof value === "object" && value !== null)
    return Object.entries(value)
      .map(([k, v]) => `${k}=${Cause.isCause(v) ? Cause.pretty(v) : inspect(v, { depth: 3 })}`)
      .join(" ")
  return String(value)
}

/**
 * The bench process's appender (tsx) and these bundled workers see different source text for the same handlers, so
 * each registration warns that the perspectives' fingerprints differ: a bench artefact (the logic is the same), not
 * printed.
 */
const artefact = /differ from those version \d+ was registered with/

const logger = Logger.make((o) => {
  const message = (Array.isArray(o.message) ? o.message : [o.message])
    .map((part: unknown) => (typeof part === "string" ? part : describe(part)))
    .join(" ")
  if (artefact.test(message)) return
  console.error(
    `[tenant worker ${config.applicationName} ${o.logLevel}${process.env.BENCH_WORKER_LOG_LEVEL ? ` ${o.date.toISOString()}` : ""}] ${message}${o.cause.reasons.length > 0 ? `\n${Cause.pretty(o.cause)}` : ""}`
  )
})

const program = Effect.gen(function* () {
  const tenants = yield* Tenants.Tenants
  send({ kind: "ready", at: now() })
  while (true) {
    const active = (yield* tenants.active).length
    const loopMaxMs = loopDelay.max / 1e6
    loopDelay.reset()
    send({
      kind: "status",
      at: now(),
      applied,
      started,
      lastCommit,
      active,
      rss: process.memoryUsage().rss,
      cpuMs: cpuMs(),
      loopMaxMs,
      queries: QueryCounter.totalRoundTrips()
    })
    if (commits.length > 0) {
      send({ kind: "commits", commits })
      commits = []
    }
    yield* Effect.sleep("200 millis")
  }
}).pipe(
  Effect.provide(layer),
  Effect.provide(Logger.layer([logger])),
  // `BENCH_WORKER_LOG_LEVEL=Debug` (diagnosis only): the fleet's and the services' debug lines, timestamped.
  Effect.provideService(References.MinimumLogLevel, (process.env.BENCH_WORKER_LOG_LEVEL ?? "Warn") as LogLevel.LogLevel),
  Effect.tapCause((cause) => Effect.sync(() => console.error(`[tenant worker ${config.applicationName}] died:\n${Cause.pretty(cause)}`)))
)

QueryCounter.installTotal()
// `BENCH_WORKER_COUNT_QUERIES=1` (profiling only): round trips per statement, printed to stderr when the run ends.
if (process.env.BENCH_WORKER_COUNT_QUERIES === "1") QueryCounter.install()
process.on("disconnect", () => {
  if (process.env.BENCH_WORKER_COUNT_QUERIES === "1") console.error(`[${config.applicationName}] round trips:\n${QueryCounter.report()}`)
  process.exit(0)
})
process.on("message", (m: { readonly kind?: string; readonly on?: boolean }) => {
  if (m.kind === "go") Effect.runFork(Effect.scoped(program))
  else if (m.kind === "report") {
    reporting = m.on === true
    if (!reporting) commits = []
  }
})
send({ kind: "loaded", at: now() })
