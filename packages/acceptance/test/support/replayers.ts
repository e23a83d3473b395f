// Starts instances of replayer.ts for a test and talks to them; they stop with the test's scope.
import { fileURLToPath } from "node:url"
import { Deferred, Effect, type Scope } from "effect"
import * as ChildScript from "./childScript.js"

const entry = fileURLToPath(new URL("./replayer.ts", import.meta.url))

export interface Replayer {
  /** The history events this instance replayed so far, by perspective key. */
  readonly stats: Effect.Effect<Record<string, number>, Error>
  /** Kills the process (SIGKILL): no finalizer runs, its transaction in flight rolls back. Waits until it is gone. */
  readonly kill: Effect.Effect<void>
}

export interface Options {
  readonly url: string
  readonly schema: string
  /** `serve`: `Whizbang.layer`; `builder`: `Whizbang.layerBuilder`. */
  readonly role: "serve" | "builder"
  readonly perspectives?: ReadonlyArray<string>
  /** `versions` options over the script's (`interval` 20 ms). */
  readonly versions?: Record<string, unknown>
}

export const start = (options: Options): Effect.Effect<Replayer, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const ready = yield* Deferred.make<void, Error>()
    const exited = yield* Deferred.make<void>()
    const waiting: Array<Deferred.Deferred<Record<string, number>, Error>> = []
    const child: ChildScript.ChildScript = yield* ChildScript.start(
      entry,
      {
        DATABASE_URL: options.url,
        ACCEPTANCE_SCHEMA: options.schema,
        ACCEPTANCE_ROLE: options.role,
        ...(options.perspectives ? { ACCEPTANCE_PERSPECTIVES: options.perspectives.join(",") } : {}),
        ...(options.versions ? { ACCEPTANCE_VERSIONS: JSON.stringify(options.versions) } : {})
      },
      (line) => {
        if (line === "ready") Deferred.doneUnsafe(ready, Effect.void)
        else if (line.startsWith('{"replayed"')) {
          const next = waiting.shift()
          if (next !== undefined)
            Deferred.doneUnsafe(next, Effect.succeed((JSON.parse(line) as { replayed: Record<string, number> }).replayed))
        } else if (process.env.DEBUG_REPLAYERS) console.log(`[${options.role}] ${line}`)
      },
      (code) => {
        const error = new Error(`replayer exited with ${code}: ${child.stderr()}`)
        Deferred.doneUnsafe(ready, Effect.fail(error))
        for (const next of waiting.splice(0)) Deferred.doneUnsafe(next, Effect.fail(error))
        Deferred.doneUnsafe(exited, Effect.void)
      }
    )
    yield* Deferred.await(ready)
    return {
      stats: Effect.gen(function* () {
        const answer = yield* Deferred.make<Record<string, number>, Error>()
        waiting.push(answer)
        child.send("stats")
        return yield* Deferred.await(answer)
      }),
      kill: Effect.andThen(
        Effect.sync(() => child.kill()),
        Deferred.await(exited)
      )
    }
  })
