/**
 * The chaos run: N worker processes (`worker.ts`, each its own instance id) process a stream of appends while
 * random workers are SIGKILLed and restarted; then every read model is checked against the fold of its stream.
 *
 * Orchestration (child processes, timers) is plain async code; everything that touches Whizbang is an Effect run
 * against one layer (event store, client) built for the run.
 */
import { type ChildProcess, fork } from "node:child_process"
import { randomUUID } from "node:crypto"
import { fileURLToPath } from "node:url"
import { EventStore, InstanceProvider } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, SchemaReady } from "@whizbang/postgres"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as Domain from "./domain.js"

export interface ChaosOptions {
  readonly url: string
  readonly instances: number
  readonly streams: number
  readonly events: number
  readonly kills: number
  /** Seconds over which the events are appended (kills are spread over the same window). */
  readonly duration: number
  /** `abandonStaleInstanceThreshold` of the workers, in seconds. Default 2. */
  readonly abandonSeconds?: number
  /** Safety-net poll of the workers. Default 250 ms. */
  readonly pollMilliseconds?: number
  /** How long to wait for the backlog to drain after the last append. Default 120 s. */
  readonly drainTimeoutSeconds?: number
  readonly log?: (line: string) => void
  readonly verbose?: boolean
}

export interface Kill {
  readonly instanceId: string
  /** Milliseconds since the start of the run. */
  readonly at: number
  /** Stream leases the instance held when it died. */
  readonly leasesHeld: number
  /** From the kill until the dead instance held no lease and was no longer counted live (its share re-spread). */
  readonly takeoverMs: number | undefined
}

export interface ChaosReport {
  readonly passed: boolean
  readonly eventsAppended: number
  readonly streams: number
  readonly eventsLost: number
  readonly eventsAppliedTwice: number
  readonly streamsOutOfOrder: number
  readonly modelsNotEqualToFold: number
  readonly workRowsLeft: number
  readonly deadLetters: number
  readonly kills: ReadonlyArray<Kill>
  readonly worstTakeoverMs: number
  /** The oldest pending work row seen while the run went on: the longest any event waited. */
  readonly maxPendingAgeMs: number
  readonly drainMs: number
  readonly elapsedMs: number
}

const workerPath = fileURLToPath(new URL("./worker.ts", import.meta.url))
const sourceTsconfig = fileURLToPath(new URL("../tsconfig.source.json", import.meta.url))
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

interface Worker {
  readonly instanceId: string
  readonly child: ChildProcess
  readonly exited: Promise<void>
}

/** Runs the chaos scenario; resolves with the report (never throws for a failed verification: `passed` says it). */
export const runChaos = async (options: ChaosOptions): Promise<ChaosReport> => {
  const log = options.log ?? ((line: string) => console.log(line))
  const abandonSeconds = options.abandonSeconds ?? 2
  const started = Date.now()
  const now = () => Date.now() - started

  // The parent appends and inspects; it runs no worker (layerPorts) and never registers as an instance.
  const layer = PgPerspectivePipeline.layerPorts({ events: Domain.events, perspectives: Domain.perspectives }).pipe(
    Layer.provideMerge(SchemaReady.layer),
    Layer.provideMerge(PgClient.layer({ url: options.url, schema: Domain.schema, maxConnections: 10, applicationName: "whizbang-chaos" })),
    Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "chaos-driver" }))
  )
  const scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const run = <A, E>(effect: Effect.Effect<A, E, EventStore.EventStore | PgClient.PgClient>) =>
    Effect.runPromise(Effect.provide(effect, context))
  const client = Context.get(context, PgClient.PgClient)
  const query = <Row extends object>(sql: string, params: ReadonlyArray<unknown> = []) => Effect.runPromise(client.query<Row>(sql, params))

  const workers = new Map<string, Worker>()
  const start = async (): Promise<Worker> => {
    const instanceId = randomUUID()
    const child = fork(workerPath, [], {
      execArgv: ["--import", "tsx"],
      env: {
        ...process.env,
        TSX_TSCONFIG_PATH: process.env.TSX_TSCONFIG_PATH ?? sourceTsconfig,
        DATABASE_URL: options.url,
        INSTANCE_ID: instanceId,
        ABANDON_SECONDS: String(abandonSeconds),
        POLL_MS: String(options.pollMilliseconds ?? 250),
        ...(options.verbose ? { VERBOSE: "1" } : {})
      },
      stdio: ["ignore", options.verbose ? "inherit" : "ignore", "inherit", "ipc"]
    })
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
    await new Promise<void>((resolve, reject) => {
      child.once("message", () => resolve())
      child.once("exit", (code) => reject(new Error(`worker ${instanceId} exited with ${code} before it was ready`)))
    })
    const worker = { instanceId, child, exited }
    workers.set(instanceId, worker)
    return worker
  }

  const kills: Array<{ instanceId: string; at: number; leasesHeld: number; takeoverMs?: number }> = []
  let maxPendingAgeMs = 0
  let appended = 0
  const nextSeq = new Map<string, number>()
  const streamIds = Array.from({ length: options.streams }, () => randomUUID())
  try {
    await Promise.all(Array.from({ length: options.instances }, start))
    log(
      `started ${options.instances} worker processes; appending ${options.events} events to ${options.streams} streams over ${options.duration} s with ${options.kills} kills`
    )

    // Monitor: takeover of killed instances, and the oldest pending work.
    let monitoring = true
    const monitor = (async () => {
      while (monitoring) {
        const [age] = await query<{ ms: number }>(
          "select coalesce(extract(epoch from now() - min(created_at)) * 1000, 0)::float8 as ms from wh_perspective_events"
        )
        maxPendingAgeMs = Math.max(maxPendingAgeMs, age?.ms ?? 0)
        for (const kill of kills.filter((k) => k.takeoverMs === undefined)) {
          const [state] = await query<{ leases: number; live: boolean }>(
            `select (select count(*)::int from wh_active_streams where instance_id = $1) as leases,
                    exists(select 1 from wh_service_instances where instance_id = $1 and last_heartbeat_at > now() - make_interval(secs => $2::int)) as live`,
            [kill.instanceId, abandonSeconds]
          )
          if (state !== undefined && state.leases === 0 && !state.live) kill.takeoverMs = now() - kill.at
        }
        await sleep(50)
      }
    })()

    // Appends, paced over the duration; one append per stream per tick, so a stream's appends never race.
    const killAt = Array.from({ length: options.kills }, (_, i) => ((i + 1) * options.duration * 1000) / (options.kills + 1))
    const durationMs = options.duration * 1000
    const appendStart = Date.now()
    const window = () => Date.now() - appendStart
    while (appended < options.events || killAt.length > 0) {
      const tick = Date.now()
      const due = Math.min(options.events, Math.ceil((options.events * (window() + 100)) / durationMs))
      const counts = new Map<string, number>()
      for (let i = appended; i < due; i++) {
        const id = streamIds[Math.floor(Math.random() * streamIds.length)]!
        counts.set(id, (counts.get(id) ?? 0) + 1)
      }
      await run(
        Effect.flatMap(Effect.service(EventStore.EventStore), (store) =>
          Effect.forEach(
            counts,
            ([id, n]) => {
              const first = (nextSeq.get(id) ?? 0) + 1
              return store
                .append(
                  id,
                  Array.from({ length: n }, (_, k) => Domain.EntryAdded.make({ ledgerId: id, seq: first + k }))
                )
                .pipe(Effect.tap(() => Effect.sync(() => nextSeq.set(id, first + n - 1))))
            },
            { concurrency: 8, discard: true }
          )
        )
      )
      appended = due
      while (killAt.length > 0 && (killAt[0]! <= window() || appended >= options.events)) {
        killAt.shift()
        const victims = [...workers.values()]
        const victim = victims[Math.floor(Math.random() * victims.length)]
        if (victim === undefined) continue
        const [held] = await query<{ n: number }>("select count(*)::int as n from wh_active_streams where instance_id = $1", [
          victim.instanceId
        ])
        victim.child.kill("SIGKILL")
        kills.push({ instanceId: victim.instanceId, at: now(), leasesHeld: held?.n ?? 0 })
        workers.delete(victim.instanceId)
        await victim.exited
        log(`  ${(now() / 1000).toFixed(1)} s: SIGKILL ${victim.instanceId} (held ${held?.n ?? 0} stream lease(s)); restarting a worker`)
        // Appends pause while the replacement boots: on a small machine its start-up (transpiling the sources) would
        // otherwise starve the surviving workers and measure the machine rather than the takeover.
        await start()
      }
      await sleep(Math.max(0, 100 - (Date.now() - tick)))
    }

    // Drain: wait for the backlog and for every killed instance's takeover.
    const drainStart = Date.now()
    const deadline = drainStart + (options.drainTimeoutSeconds ?? 120) * 1000
    for (;;) {
      const [left] = await query<{ n: number }>("select count(*)::int as n from wh_perspective_events")
      if ((left?.n ?? 0) === 0 && kills.every((k) => k.takeoverMs !== undefined)) break
      if (Date.now() > deadline) break
      await sleep(100)
    }
    const drainMs = Date.now() - drainStart
    monitoring = false
    await monitor

    // Graceful stop: SIGTERM lets each worker stop and deregister.
    await Promise.all([...workers.values()].map((w) => (w.child.kill("SIGTERM"), w.exited)))
    workers.clear()

    // Verification against the database's own events.
    const perStream = await query<{ stream_id: string; n: number }>(
      "select stream_id, count(*)::int as n from wh_events group by stream_id"
    )
    const ledgers = new Map(
      (await query<{ id: string; data: Domain.Ledger }>("select id, data from wh_per_ledger")).map((r) => [r.id, r.data])
    )
    const totals = new Map(
      (await query<{ id: string; data: Domain.Totals }>("select id, data from wh_per_totals")).map((r) => [r.id, r.data])
    )
    let lost = 0,
      twice = 0,
      outOfOrder = 0,
      notFold = 0
    for (const { n, stream_id } of perStream) {
      if (n !== nextSeq.get(stream_id)) notFold++
      const seqs = ledgers.get(stream_id)?.seqs ?? []
      const seen = new Set(seqs)
      for (let s = 1; s <= n; s++) if (!seen.has(s)) lost++
      twice += seqs.length - seen.size
      if (seqs.some((s, i) => i > 0 && s <= seqs[i - 1]!)) outOfOrder++
      const expected = Domain.fold(n)
      const total = totals.get(stream_id)
      const sameSeqs = seqs.length === n && seqs.every((s, i) => s === expected.ledger.seqs[i])
      if (!sameSeqs || total?.count !== expected.totals.count || total.sum !== expected.totals.sum) notFold++
    }
    const [rows] = await query<{ work: number; letters: number; events: number }>(
      "select (select count(*)::int from wh_perspective_events) as work, (select count(*)::int from wh_dead_letters) as letters, (select count(*)::int from wh_events) as events"
    )
    const finished = kills.map((k): Kill => ({ instanceId: k.instanceId, at: k.at, leasesHeld: k.leasesHeld, takeoverMs: k.takeoverMs }))
    const report: ChaosReport = {
      passed:
        lost === 0 &&
        twice === 0 &&
        outOfOrder === 0 &&
        notFold === 0 &&
        rows!.work === 0 &&
        rows!.letters === 0 &&
        rows!.events === options.events &&
        finished.every((k) => k.takeoverMs !== undefined),
      eventsAppended: rows!.events,
      streams: perStream.length,
      eventsLost: lost,
      eventsAppliedTwice: twice,
      streamsOutOfOrder: outOfOrder,
      modelsNotEqualToFold: notFold,
      workRowsLeft: rows!.work,
      deadLetters: rows!.letters,
      kills: finished,
      worstTakeoverMs: Math.max(0, ...finished.map((k) => k.takeoverMs ?? Number.POSITIVE_INFINITY)),
      maxPendingAgeMs: Math.round(maxPendingAgeMs),
      drainMs,
      elapsedMs: now()
    }
    return report
  } finally {
    for (const w of workers.values()) w.child.kill("SIGKILL")
    await Promise.all([...workers.values()].map((w) => w.exited))
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** The report as lines of text. */
export const formatReport = (r: ChaosReport): ReadonlyArray<string> => [
  `chaos run ${r.passed ? "PASSED" : "FAILED"} in ${(r.elapsedMs / 1000).toFixed(1)} s`,
  `  events appended ${r.eventsAppended} on ${r.streams} streams; backlog drained ${r.drainMs} ms after the last append`,
  `  events lost ${r.eventsLost}, applied twice ${r.eventsAppliedTwice}, streams out of order ${r.streamsOutOfOrder}, models != fold ${r.modelsNotEqualToFold}`,
  `  work rows left ${r.workRowsLeft}, dead letters ${r.deadLetters}`,
  `  longest wait of an event ${r.maxPendingAgeMs} ms`,
  `  takeover after SIGKILL (ms): ${r.kills.map((k) => `${k.takeoverMs ?? "never"}${k.leasesHeld > 0 ? ` [${k.leasesHeld} leases]` : ""}`).join(", ") || "(no kills)"}`,
  `  worst takeover ${r.worstTakeoverMs} ms`
]
