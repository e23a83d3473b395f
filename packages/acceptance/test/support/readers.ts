// Starts a read-side process (see reader.ts) for a test and asks it for reads; it stops with the test's scope.
import { fileURLToPath } from "node:url"
import { Deferred, Effect, type Scope } from "effect"
import * as ChildScript from "./childScript.js"

const entry = fileURLToPath(new URL("./reader.ts", import.meta.url))

/** What the reader answered: the wait's outcome and the row's version (0: no row). */
export interface Read {
  readonly outcome: string
  readonly version: number
  /** How long the wait took, in ms. */
  readonly elapsed: number
  readonly deadLettered: ReadonlyArray<string>
  /** With `Failing`: its failing events (`nextAttemptAt` as an ISO string, after JSON). */
  readonly failing: ReadonlyArray<{
    readonly eventId: string
    readonly streamId: string
    readonly perspectiveName: string
    readonly error: string
    readonly attempts: number
    readonly nextAttemptAt?: string
  }>
}

export interface Reader {
  /** `SyncAwareLens.getById(balance, stream, SyncFilter.forStream(stream))` in the reader process. */
  readonly read: (streamId: string) => Effect.Effect<Read, Error>
}

export const start = (options: { readonly url: string; readonly schema: string }): Effect.Effect<Reader, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const ready = yield* Deferred.make<void, Error>()
    const pending = new Map<string, Deferred.Deferred<Read, Error>>()
    const child: ChildScript.ChildScript = yield* ChildScript.start(
      entry,
      { DATABASE_URL: options.url, ACCEPTANCE_SCHEMA: options.schema },
      (line) => {
        if (line === "ready") Deferred.doneUnsafe(ready, Effect.void)
        else if (line.startsWith("{")) {
          const { id, ...read } = JSON.parse(line) as Read & { readonly id: string }
          const answer = pending.get(id)
          pending.delete(id)
          if (answer !== undefined) Deferred.doneUnsafe(answer, Effect.succeed(read))
        }
      },
      (code) => {
        const error = new Error(`reader exited with ${code}: ${child.stderr()}`)
        Deferred.doneUnsafe(ready, Effect.fail(error))
        for (const answer of pending.values()) Deferred.doneUnsafe(answer, Effect.fail(error))
        pending.clear()
      }
    )
    yield* Deferred.await(ready)
    let next = 0
    return {
      read: (streamId) =>
        Effect.suspend(() => {
          const id = String(next++)
          const answer = Deferred.makeUnsafe<Read, Error>()
          pending.set(id, answer)
          child.send(`${id} ${streamId}`)
          return Deferred.await(answer)
        })
    }
  })
