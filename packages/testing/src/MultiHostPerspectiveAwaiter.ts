/**
 * Waits, in a test, until perspectives have processed events — whichever process (host) runs the worker. It asks
 * the database, not an in-process tracker, so it is right with workers in other processes; it re-checks on every
 * completion `NOTIFY` (channel `wh_processed`) and on a short safety poll.
 *
 * ```ts
 * const hosts = yield* MultiHostPerspectiveAwaiter.MultiHostPerspectiveAwaiter
 * const { deadLettered } = yield* hosts.awaitPerspectives({ perspectives: ["order_summary"], eventIds })
 * ```
 *
 * Done when every asked event is committed and none has a pending work row for the asked perspectives (none
 * given: every perspective; no ids: all pending work). Dead-lettered ones are not pending: the answer names them.
 * On timeout: `AwaiterTimeoutError`, naming the (perspective, event) pairs still pending — a pending event whose
 * apply failed with its attempts and error, so a test stuck behind a failing event says why — and the ids not yet
 * committed.
 *
 * @since 0.2.0
 */
import { PgClient, type PostgresError } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Context, Duration, Effect, Layer, Option, Stream } from "effect"
import { AwaiterTimeoutError } from "./AwaiterTimeoutError.js"
import { Observed } from "./internal/observed.js"

/**
 * What to wait for.
 *
 * @category models
 * @since 0.2.0
 */
export interface PerspectivesWait {
  /** Default: every perspective. */
  readonly perspectives?: ReadonlyArray<string> | undefined
  /** Default: all pending work. */
  readonly eventIds?: ReadonlyArray<string> | undefined
  /** Default 10 s. */
  readonly timeout?: Duration.Input | undefined
}

/**
 * The answer: the awaited (perspective, event) pairs that were dead-lettered instead of applied.
 *
 * @category models
 * @since 0.2.0
 */
export interface PerspectivesDone {
  readonly deadLettered: ReadonlyArray<{ readonly perspectiveName: string; readonly eventId: string }>
}

/**
 * The awaiter's operations.
 *
 * @category models
 * @since 0.2.0
 */
export interface MultiHostPerspectiveAwaiterShape {
  readonly awaitPerspectives: (
    wait?: PerspectivesWait
  ) => Effect.Effect<PerspectivesDone, AwaiterTimeoutError | PostgresError.PostgresError>
}

/**
 * The awaiter service.
 *
 * @category services
 * @since 0.2.0
 */
export class MultiHostPerspectiveAwaiter extends Context.Service<MultiHostPerspectiveAwaiter, MultiHostPerspectiveAwaiterShape>()(
  "@whizbang/testing/MultiHostPerspectiveAwaiter"
) {}

const safetyPoll = Duration.millis(250)

/**
 * The awaiter, listening on `wh_processed` for as long as the layer lives.
 *
 * @category layers
 * @since 0.2.0
 */
export const layer: Layer.Layer<MultiHostPerspectiveAwaiter, never, PgClient.PgClient> = Layer.effect(
  MultiHostPerspectiveAwaiter,
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    const changes = new Observed<number>()
    yield* Effect.forkScoped(
      Stream.runForEach(client.listen("wh_processed"), () => Effect.sync(() => changes.record(changes.items.length)))
    )

    const check = (perspectives: ReadonlyArray<string>, eventIds: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const pending = yield* PgOperations.Awaits.pending(client, { perspectives, eventIds })
        const uncommitted = eventIds.length === 0 ? [] : yield* PgOperations.Awaits.uncommitted(client, { eventIds })
        return { pending, uncommitted }
      })

    return MultiHostPerspectiveAwaiter.of({
      awaitPerspectives: (wait) =>
        Effect.gen(function* () {
          const perspectives = wait?.perspectives ?? []
          const eventIds = wait?.eventIds ?? []
          const timeout = Duration.fromInputUnsafe(wait?.timeout ?? Duration.seconds(10))
          let last = {
            pending: [] as ReadonlyArray<(typeof PgOperations.Awaits.Pending)["Type"]>,
            uncommitted: [] as ReadonlyArray<{ readonly eventId: string }>
          }
          const loop: Effect.Effect<void, PostgresError.PostgresError> = Effect.gen(function* () {
            while (true) {
              const seen = changes.items.length
              last = yield* check(perspectives, eventIds)
              if (last.pending.length === 0 && last.uncommitted.length === 0) return
              yield* Effect.raceFirst(
                Effect.asVoid(
                  changes.awaitFirst(
                    (n) => n >= seen,
                    Duration.infinity,
                    "",
                    () => ""
                  )
                ).pipe(Effect.orDie),
                Effect.sleep(safetyPoll)
              )
            }
          })
          const done = yield* Effect.timeoutOption(loop, timeout)
          if (Option.isNone(done)) {
            const pairs = last.pending.map(
              (p) => `${p.perspectiveName}/${p.eventId}${p.error === null ? "" : ` (failing after ${p.attempts} attempt(s): ${p.error})`}`
            )
            return yield* new AwaiterTimeoutError({
              awaiter: "MultiHostPerspectiveAwaiter",
              waitingFor:
                [
                  pairs.length > 0 ? `pending (perspective/event): ${pairs.join(", ")}` : "",
                  last.uncommitted.length > 0 ? `not yet committed: ${last.uncommitted.map((u) => u.eventId).join(", ")}` : ""
                ]
                  .filter((s) => s.length > 0)
                  .join("; ") || "the last check (none pending when it ran)",
              timeout
            })
          }
          const deadLettered = eventIds.length === 0 ? [] : yield* PgOperations.Awaits.deadLettered(client, { perspectives, eventIds })
          return { deadLettered }
        })
    })
  })
)
