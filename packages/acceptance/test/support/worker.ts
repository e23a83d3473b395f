// A worker process of the acceptance suite: `Whizbang.layer` as the README composes it, started by the tests
// with `--import tsx`. Environment: DATABASE_URL, ACCEPTANCE_SCHEMA, ACCEPTANCE_PERSPECTIVES (comma-separated
// names this instance runs; default all), ACCEPTANCE_OPTIONS (JSON worker options over the suite's; its
// `failureBackoff` goes to the coordinator), ACCEPTANCE_VERSIONS (JSON `versions` options), ACCEPTANCE_PAUSE_HANDOVER
// (a hand-over step: every hand-over prints "handover <step> <key>" there and waits until the process stops). Prints
// "ready" once the worker polls; then answers each "idle" line on stdin, after the worker's `awaitIdle`, with one JSON
// line. Stops gracefully (deregisters) when stdin ends.
import { writeSync } from "node:fs"
import { createInterface } from "node:readline"
import { type Duration, Effect, Layer } from "effect"
import { PerspectiveWorker, PgPerspectiveRewinder, PgPerspectiveVersions, Receptor, Whizbang } from "whizbang"
import * as Domain from "./domain.js"
import * as RunScript from "./runScript.js"

const only = process.env.ACCEPTANCE_PERSPECTIVES?.split(",")
const { failureBackoff, ...overrides } = JSON.parse(process.env.ACCEPTANCE_OPTIONS ?? "{}") as {
  readonly failureBackoff?: { readonly initial?: Duration.Input; readonly multiplier?: number; readonly max?: Duration.Input }
  readonly [option: string]: unknown
}
const versions = process.env.ACCEPTANCE_VERSIONS === undefined ? undefined : JSON.parse(process.env.ACCEPTANCE_VERSIONS)
const pause = process.env.ACCEPTANCE_PAUSE_HANDOVER

// The test kills or stops the process while a hand-over waits here; writeSync puts the line out before the wait.
const hooks =
  pause === undefined
    ? Layer.empty
    : Layer.succeed(PgPerspectiveVersions.HandOverHooks, {
        onStep: (step, key) =>
          step === pause
            ? Effect.andThen(
                Effect.sync(() => writeSync(1, `handover ${step} ${key}\n`)),
                Effect.never
              )
            : Effect.void
      })

const app = Layer.unwrap(
  Effect.gen(function* () {
    const { events, perspectives, balanceV2 } = yield* Domain.definitions
    // ACCEPTANCE_EFFECTS: a PostPerspective receptor on balance prints "effect <event id>" per firing (a side effect the
    // test counts across processes).
    const receptors =
      process.env.ACCEPTANCE_EFFECTS === "1"
        ? [
            Receptor.make({
              name: "balance-effect",
              handles: [Domain.Deposited, Domain.Withdrawn],
              stage: "PostPerspective",
              perspective: "balance",
              // process.stdout.write queues (a full pipe never fails it), in order with the idle answers.
              handle: (e) => Effect.sync(() => process.stdout.write(`effect ${e.eventId}\n`))
            })
          ]
        : []
    return Whizbang.layer({
      databaseUrl: process.env.DATABASE_URL,
      schema: process.env.ACCEPTANCE_SCHEMA ?? "whizbang",
      serviceName: "acceptance-worker",
      events,
      perspectives: [...perspectives, balanceV2].filter((p) => (only === undefined ? p !== balanceV2 : only.includes(p.name))),
      receptors,
      options: { ...Domain.options, ...overrides },
      ...(failureBackoff ? { failureBackoff } : {}),
      rewind: Domain.rewind,
      watchdog: { interval: null },
      ...(versions ? { versions } : {})
    })
  })
).pipe(Layer.provide(hooks))

const main = Effect.gen(function* () {
  const worker = yield* PerspectiveWorker.PerspectiveWorker
  const rewinder = yield* PgPerspectiveRewinder.PgPerspectiveRewinder
  const answer = Effect.gen(function* () {
    yield* worker.awaitIdle
    const line = { type: "idle", idle: yield* worker.isIdle, stats: yield* worker.stats, rewinds: yield* rewinder.stats }
    process.stdout.write(`${JSON.stringify(line)}\n`)
  })
  createInterface({ input: process.stdin }).on("line", (line) => {
    if (line === "idle") Effect.runFork(answer)
  })
  yield* worker.awaitPolls(1)
  process.stdout.write("ready\n")
  return yield* Effect.never
}).pipe(Effect.provide(app), Effect.scoped)

RunScript.run("acceptance worker", main)
