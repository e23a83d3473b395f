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
import { PgClient, PgListener, type PostgresError } from "@whizbang/postgres"
import { Context, Duration, Effect, Layer, Option } from "effect"
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

const pendingSql = `
SELECT pe.perspective_name, pe.event_id::text AS event_id, pe.attempts, pe.error FROM wh_perspective_events pe
WHERE pe.processed_at IS NULL
  AND (cardinality($1::text[]) = 0 OR pe.perspective_name = ANY($1::text[]))
  AND (cardinality($2::uuid[]) = 0 OR pe.event_id = ANY($2::uuid[]))
ORDER BY pe.event_id LIMIT 20`

interface Pending {
  readonly perspective_name: string
  readonly event_id: string
  readonly attempts: number
  readonly error: string | null
}

const uncommittedSql = `
SELECT i.id::text AS event_id FROM unnest($1::uuid[]) AS i(id)
WHERE NOT EXISTS (SELECT 1 FROM wh_events e WHERE e.event_id = i.id) LIMIT 20`

const deadLetteredSql = `
SELECT perspective_name, event_id::text AS event_id FROM wh_dead_letters
WHERE (cardinality($1::text[]) = 0 OR perspective_name = ANY($1::text[])) AND event_id = ANY($2::uuid[])
ORDER BY event_id`

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
    yield* PgListener.fork("wh_processed", () => changes.record(changes.items.length))

    const check = (perspectives: ReadonlyArray<string>, eventIds: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const pending = yield* client.query<Pending>(pendingSql, [perspectives, eventIds])
        const uncommitted = eventIds.length === 0 ? [] : yield* client.query<{ event_id: string }>(uncommittedSql, [eventIds])
        return { pending, uncommitted }
      })

    return MultiHostPerspectiveAwaiter.of({
      awaitPerspectives: (wait) =>
        Effect.gen(function* () {
          const perspectives = wait?.perspectives ?? []
          const eventIds = wait?.eventIds ?? []
          const timeout = Duration.fromInputUnsafe(wait?.timeout ?? Duration.seconds(10))
          let last = {
            pending: [] as ReadonlyArray<Pending>,
            uncommitted: [] as ReadonlyArray<{ event_id: string }>
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
              (p) => `${p.perspective_name}/${p.event_id}${p.error === null ? "" : ` (failing after ${p.attempts} attempt(s): ${p.error})`}`
            )
            return yield* new AwaiterTimeoutError({
              awaiter: "MultiHostPerspectiveAwaiter",
              waitingFor:
                [
                  pairs.length > 0 ? `pending (perspective/event): ${pairs.join(", ")}` : "",
                  last.uncommitted.length > 0 ? `not yet committed: ${last.uncommitted.map((u) => u.event_id).join(", ")}` : ""
                ]
                  .filter((s) => s.length > 0)
                  .join("; ") || "the last check (none pending when it ran)",
              timeout
            })
          }
          const dead =
            eventIds.length === 0
              ? []
              : yield* client.query<{ perspective_name: string; event_id: string }>(deadLetteredSql, [perspectives, eventIds])
          return { deadLettered: dead.map((d) => ({ perspectiveName: d.perspective_name, eventId: d.event_id })) }
        })
    })
  })
)
