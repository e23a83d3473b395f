// Starts worker processes (see worker.ts) for a test and talks to them; they stop with the test's scope.
import { fileURLToPath } from "node:url"
import { Deferred, Effect, type Scope } from "effect"
import * as ChildScript from "./childScript.js"

const entry = fileURLToPath(new URL("./worker.ts", import.meta.url))

/** What a worker answers once idle. */
export interface IdleReport {
  readonly idle: boolean
  readonly stats: { readonly polls: number; readonly eventsApplied: number; readonly failures: number; readonly deduped: number }
  readonly rewinds: { readonly rewound: number; readonly failed: number; readonly locked: number; readonly replayedEvents: number }
}

export interface Worker {
  /** Resolves after the worker's `awaitIdle`, with its state then. */
  readonly awaitIdle: Effect.Effect<IdleReport, Error>
  /** Resolves once the worker blocks in the apply of the event tagged "hold" (see `holdDir`). */
  readonly held: Effect.Effect<void, Error>
  /** Event ids the worker's side-effect receptor fired for so far (`effects: true`), in order. */
  readonly effects: () => ReadonlyArray<string>
  /** Resolves with the version's key once a hand-over paused at `pauseHandOver`. */
  readonly paused: Effect.Effect<string, Error>
  /** The lines the worker logged (its stdout, but for the lines of the protocol). */
  readonly logs: () => ReadonlyArray<string>
  /** Kills the process (SIGKILL) and waits until it is gone. */
  readonly kill: Effect.Effect<void>
  /** Closes its stdin (it stops gracefully: its layers release) and waits until it exited. */
  readonly stop: Effect.Effect<void>
}

export interface Options {
  readonly url: string
  readonly schema: string
  readonly perspectives?: ReadonlyArray<string>
  /** A directory: the worker blocks applying the event tagged "hold" until the file `release` appears in it. */
  readonly holdDir?: string
  /** Worker options over the suite's fast defaults (e.g. fewer attempts before a dead letter). */
  readonly options?: Record<string, unknown>
  /** Run the PostPerspective receptor on balance that reports each firing. */
  readonly effects?: boolean
  /** `Whizbang.layer`'s `versions` options over the worker's. */
  readonly versions?: Record<string, unknown>
  /** Pause every hand-over at this step (`PgPerspectiveVersions.HandOverHooks`) until the process stops. */
  readonly pauseHandOver?: "locked" | "ready" | "caughtUp"
}

export const start = (options: Options): Effect.Effect<Worker, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const ready = yield* Deferred.make<void, Error>()
    const held = yield* Deferred.make<void, Error>()
    const paused = yield* Deferred.make<string, Error>()
    const exited = yield* Deferred.make<void>()
    const waiting: Array<Deferred.Deferred<IdleReport, Error>> = []
    const effects: Array<string> = []
    const logs: Array<string> = []
    const child: ChildScript.ChildScript = yield* ChildScript.start(
      entry,
      {
        DATABASE_URL: options.url,
        ACCEPTANCE_SCHEMA: options.schema,
        ...(options.perspectives ? { ACCEPTANCE_PERSPECTIVES: options.perspectives.join(",") } : {}),
        ...(options.holdDir ? { ACCEPTANCE_HOLD_DIR: options.holdDir } : {}),
        ...(options.options ? { ACCEPTANCE_OPTIONS: JSON.stringify(options.options) } : {}),
        ...(options.effects === true ? { ACCEPTANCE_EFFECTS: "1" } : {}),
        ...(options.versions ? { ACCEPTANCE_VERSIONS: JSON.stringify(options.versions) } : {}),
        ...(options.pauseHandOver ? { ACCEPTANCE_PAUSE_HANDOVER: options.pauseHandOver } : {})
      },
      (line) => {
        if (line === "ready") Deferred.doneUnsafe(ready, Effect.void)
        else if (line === "held") Deferred.doneUnsafe(held, Effect.void)
        else if (line.startsWith("effect ")) effects.push(line.slice(7))
        else if (line.startsWith("handover ")) Deferred.doneUnsafe(paused, Effect.succeed(line.split(" ")[2]!))
        else if (line.startsWith("{")) {
          const next = waiting.shift()
          if (next !== undefined) Deferred.doneUnsafe(next, Effect.succeed(JSON.parse(line) as IdleReport))
        } else logs.push(line)
      },
      (code) => {
        const error = new Error(`worker exited with ${code}: ${child.stderr()}`)
        Deferred.doneUnsafe(ready, Effect.fail(error))
        Deferred.doneUnsafe(held, Effect.fail(error))
        Deferred.doneUnsafe(paused, Effect.fail(error))
        for (const next of waiting.splice(0)) Deferred.doneUnsafe(next, Effect.fail(error))
        Deferred.doneUnsafe(exited, Effect.void)
      }
    )
    yield* Deferred.await(ready)
    return {
      effects: () => effects,
      held: Deferred.await(held),
      paused: Deferred.await(paused),
      logs: () => logs,
      kill: Effect.andThen(
        Effect.sync(() => child.kill()),
        Deferred.await(exited)
      ),
      stop: Effect.andThen(
        Effect.sync(() => child.end()),
        Deferred.await(exited)
      ),
      awaitIdle: Effect.gen(function* () {
        const answer = yield* Deferred.make<IdleReport, Error>()
        waiting.push(answer)
        child.send("idle")
        return yield* Deferred.await(answer)
      })
    }
  })

/**
 * Waits until every worker is idle and no work row is left, asking again while work remains (a rewind debounce
 * can end an idle period with work still to do). Fails after `rounds` rounds.
 */
export const settle = <E, R>(
  workers: ReadonlyArray<Worker>,
  remaining: Effect.Effect<number, E, R>,
  rounds = 20
): Effect.Effect<ReadonlyArray<IdleReport>, E | Error, R> =>
  Effect.gen(function* () {
    for (let round = 0; round < rounds; round++) {
      const reports = yield* Effect.forEach(workers, (w) => w.awaitIdle)
      if ((yield* remaining) === 0 && reports.every((r) => r.idle)) return reports
    }
    return yield* Effect.fail(new Error(`work still pending after ${rounds} idle rounds: ${yield* remaining} row(s)`))
  })
