// An instance of the acceptance service for the history-replay tests, started by the tests with `--import tsx`:
// `Whizbang.layer` (ACCEPTANCE_ROLE=serve, the default) or `Whizbang.layerBuilder` (ACCEPTANCE_ROLE=builder: it replays
// history and runs no worker). Environment: DATABASE_URL, ACCEPTANCE_SCHEMA, ACCEPTANCE_PERSPECTIVES (comma-separated
// names it runs), ACCEPTANCE_VERSIONS (JSON `versions` options). Prints "ready" once started; answers each "stats" line
// on stdin with one JSON line: the history events this process replayed, by perspective key. Stops gracefully when
// stdin ends.
import { createInterface } from "node:readline"
import { Effect, Metric } from "effect"
import { PerspectiveWorker, PgHistoryReplay, Whizbang } from "whizbang"
import * as Domain from "./domain.js"
import * as RunScript from "./runScript.js"

const role = process.env.ACCEPTANCE_ROLE ?? "serve"
const only = (process.env.ACCEPTANCE_PERSPECTIVES ?? "balance,activity,balance__v2").split(",")
const versions = JSON.parse(process.env.ACCEPTANCE_VERSIONS ?? "{}")

const main = Effect.gen(function* () {
  const { events, perspectives, balanceV2 } = yield* Domain.definitions
  const declared = [...perspectives, balanceV2].filter((p) => only.includes(p.name))
  const config: Whizbang.Config = {
    databaseUrl: process.env.DATABASE_URL,
    schema: process.env.ACCEPTANCE_SCHEMA ?? "whizbang",
    serviceName: `acceptance-${role}`,
    events,
    perspectives: declared,
    options: Domain.options,
    rewind: Domain.rewind,
    watchdog: { interval: null },
    versions: { interval: "20 millis", ...versions }
  }
  const stats = Effect.gen(function* () {
    const replayed: Record<string, number> = {}
    for (const p of declared) {
      const state = yield* Metric.value(Metric.withAttributes(PgHistoryReplay.replayedEventsCounter, { perspective: p.name }))
      replayed[p.name] = Number(state.count)
    }
    process.stdout.write(`${JSON.stringify({ replayed })}\n`)
  })
  const serve = <R>(started: Effect.Effect<void, never, R>) =>
    Effect.gen(function* () {
      yield* started
      createInterface({ input: process.stdin }).on("line", (line) => {
        if (line === "stats") Effect.runFork(stats)
      })
      process.stdout.write("ready\n")
      return yield* Effect.never
    })
  return yield* role === "builder"
    ? serve(Effect.void).pipe(Effect.provide(Whizbang.layerBuilder(config)))
    : serve(Effect.flatMap(PerspectiveWorker.PerspectiveWorker, (worker) => worker.awaitPolls(1))).pipe(
        Effect.provide(Whizbang.layer(config))
      )
}).pipe(Effect.scoped)

RunScript.run("acceptance replayer", main)
