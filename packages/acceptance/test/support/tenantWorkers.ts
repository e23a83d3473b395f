// Starts tenant worker processes (see tenantWorker.ts) for a test and talks to them; they stop with the test's scope.
import { fileURLToPath } from "node:url"
import { Deferred, Effect, type Scope } from "effect"
import * as ChildScript from "./childScript.js"

const entry = fileURLToPath(new URL("./tenantWorker.ts", import.meta.url))

export interface TenantWorker {
  /** Resolves after the worker of every tenant active in the process is idle, with those tenants. */
  readonly awaitIdle: Effect.Effect<ReadonlyArray<string>, Error>
  /** Closes its stdin (it stops gracefully) and waits until it exited. */
  readonly stop: Effect.Effect<void>
}

export const start = (options: {
  readonly url: string
  readonly schema: string
  readonly version2?: boolean
}): Effect.Effect<TenantWorker, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const ready = yield* Deferred.make<void, Error>()
    const exited = yield* Deferred.make<void>()
    const waiting: Array<Deferred.Deferred<ReadonlyArray<string>, Error>> = []
    const child: ChildScript.ChildScript = yield* ChildScript.start(
      entry,
      {
        DATABASE_URL: options.url,
        ACCEPTANCE_SCHEMA: options.schema,
        ...(options.version2 === true ? { ACCEPTANCE_VERSION2: "1" } : {})
      },
      (line) => {
        if (line === "ready") Deferred.doneUnsafe(ready, Effect.void)
        else if (line.startsWith("{")) {
          const next = waiting.shift()
          if (next !== undefined) Deferred.doneUnsafe(next, Effect.succeed((JSON.parse(line) as { active: Array<string> }).active))
        } else if (process.env.ACCEPTANCE_DEBUG === "1" && !line.includes("differ from those")) console.log(`[worker] ${line}`)
      },
      (code) => {
        const error = new Error(`tenant worker exited with ${code}: ${child.stderr()}`)
        Deferred.doneUnsafe(ready, Effect.fail(error))
        for (const next of waiting.splice(0)) Deferred.doneUnsafe(next, Effect.fail(error))
        Deferred.doneUnsafe(exited, Effect.void)
      }
    )
    yield* Deferred.await(ready)
    return {
      stop: Effect.andThen(
        Effect.sync(() => child.end()),
        Deferred.await(exited)
      ),
      awaitIdle: Effect.gen(function* () {
        const answer = yield* Deferred.make<ReadonlyArray<string>, Error>()
        waiting.push(answer)
        child.send("idle")
        return yield* Deferred.await(answer)
      })
    }
  })
