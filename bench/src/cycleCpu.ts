/**
 * Node CPU of one worker cycle, without a database: `runCycle` (the worker's fetch -> dedup -> decode -> apply ->
 * report path) over a coordinator that returns pre-built pending rows (the shape the Postgres fetch returns: the
 * bench's `Deposited` events, two perspectives) and discards completions, and a store with no models. Prints
 * microseconds of CPU per event (both perspectives), so changes to the cycle's own cost can be compared without the
 * noise of a shared database.
 *
 *   node --import tsx bench/src/cycleCpu.ts [--streams 300] [--events-per-stream 10] [--cycles 40]
 */
import { Duration, Effect } from "effect"
// The cycle is internal to @whizbang/core (not exported): the probe loads core from its sources, the cycle and the
// services it is given alike, so nothing depends on a build having run.
import {
  PerspectiveRegistry,
  PerspectiveRewinder,
  ProcessedEventCache,
  type WorkCoordinator,
  WorkerOptions
} from "../../packages/core/src/index.js"
import { runCycle } from "../../packages/core/src/internal/workerCycle.js"
import * as Domain from "./Domain.js"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? fallback : Number(process.argv[i + 1])
}
const streams = arg("streams", 300)
const perStream = arg("events-per-stream", 10)
const cycles = arg("cycles", 40)

let nextWork = 0
const uuid = (n: number) => `00000000-0000-7000-8000-${n.toString(16).padStart(12, "0")}`

/** One cycle's pending rows: `perStream` events on each of `streams` streams, one row per perspective. */
const rows = (cycle: number): Array<WorkCoordinator.PendingEvent> => {
  const out: Array<WorkCoordinator.PendingEvent> = []
  for (const perspectiveName of ["counter", "summary"]) {
    for (let s = 0; s < streams; s++) {
      const streamId = Domain.streamId(cycle * streams + s)
      for (let k = 0; k < perStream; k++) {
        const i = (cycle * streams + s) * perStream + k
        // Through JSON, as the pg driver gives flat strings and fresh objects per row.
        out.push(
          JSON.parse(
            JSON.stringify({
              workId: uuid(nextWork++),
              streamId,
              perspectiveName,
              eventId: uuid(1_000_000_000 + i),
              eventType: "Deposited",
              payload: { accountId: streamId, amount: Domain.amountOf(i), seq: k + 1 },
              attempts: 0,
              metadata: {},
              scope: {},
              blocked: false,
              rewindRequired: false,
              streamVersion: k + 1,
              cursorLastEventId: null
            })
          )
        )
      }
    }
  }
  return out
}

const program = Effect.gen(function* () {
  const options = yield* WorkerOptions.decode({})
  const perspectives = yield* PerspectiveRegistry.make(Domain.perspectives)
  // The worker's own bound (PerspectiveWorker: one full cycle's rows): an unbounded cache keeps every id of the
  // run, a map the worker never holds.
  const cache = yield* ProcessedEventCache.make({
    retention: Duration.seconds(300),
    maxRetained: options.maxStreamsPerBatch * options.perspectiveBatchSize * Domain.perspectives.length
  })
  const rewinder = yield* PerspectiveRewinder.PerspectiveRewinder
  let pending: Array<WorkCoordinator.PendingEvent> = []
  const coordinator: WorkCoordinator.Shape = {
    claimWork: () => Effect.succeed([]),
    fetchPendingEvents: () => Effect.succeed(pending),
    renewLeases: () => Effect.succeed(0),
    renewStreamLeases: () => Effect.succeed([]),
    reportCompletions: () => Effect.void,
    reportFailures: () => Effect.void
  }
  const store = {
    getMany: () => Effect.succeed(new Map())
  } as never
  const deps = {
    instanceId: uuid(1),
    coordinator,
    store,
    perspectives,
    events: Domain.registry,
    cache,
    options,
    strategy: "batched" as const,
    rewinder
  }
  let cpu = 0
  let events = 0
  for (let c = 0; c < cycles; c++) {
    pending = rows(c)
    const ids = [...new Set(pending.map((r) => r.streamId))]
    const before = process.cpuUsage()
    const result = yield* runCycle(deps, ids)
    const used = process.cpuUsage(before)
    // The first cycles warm the JIT up.
    if (c >= 5) {
      cpu += used.user + used.system
      events += result.processed.reduce((n, g) => n + g.eventIds.length, 0) / 2
    }
  }
  console.log(
    `${streams} streams x ${perStream} events x 2 perspectives per cycle, ${cycles - 5} measured cycles: ${(cpu / events).toFixed(2)} µs of CPU per event`
  )
})

Effect.runPromise(program.pipe(Effect.provide(PerspectiveRewinder.layerUnsupported)))
