/**
 * Dead letters: list, show, retry (back into the work queue as a fresh row with attempts 0, and the letter
 * deleted, in one transaction) and discard. `whizbang dead-letters` runs these; an admin UI can too.
 *
 * @since 0.1.0
 */
import { PgClient } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Effect, Option } from "effect"
import { orFailure, run } from "./internal/database.js"
import * as Validate from "./internal/validate.js"
import { notFound, type OperationError } from "./OperationError.js"

const Sql = PgOperations.DeadLetters

/**
 * @category models
 * @since 0.1.0
 */
export interface DeadLetter {
  readonly id: string
  readonly perspective: string
  readonly streamId: string
  readonly eventId: string
  readonly eventType: string
  readonly attempts: number
  readonly error: string
  readonly createdAt: string | null
}

/**
 * A dead letter with its payload.
 *
 * @category models
 * @since 0.1.0
 */
export interface Detail extends DeadLetter {
  readonly workId: string
  readonly payload: unknown
}

/**
 * What `retry` enqueued.
 *
 * @category models
 * @since 0.1.0
 */
export interface Retried {
  readonly id: string
  readonly workId: string
  readonly streamId: string
  readonly perspective: string
  readonly eventId: string
}

const toLetter = (r: typeof PgOperations.DeadLetters.Letter.Type): DeadLetter => ({
  id: r.id,
  perspective: r.perspectiveName,
  streamId: r.streamId,
  eventId: r.eventId,
  eventType: r.eventType,
  attempts: r.attempts,
  error: r.error,
  createdAt: r.createdAt.toISOString()
})

/**
 * Oldest first, optionally for one perspective.
 *
 * @category constructors
 * @since 0.1.0
 */
export const list = (
  options: { readonly perspective?: string | undefined; readonly limit?: number | undefined } = {}
): Effect.Effect<ReadonlyArray<DeadLetter>, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const perspective = options.perspective === undefined ? null : yield* Validate.perspective(options.perspective)
    const rows = yield* run(Sql.list, { perspectiveName: perspective, limit: options.limit ?? 100 })
    return rows.map(toLetter)
  })

/**
 * @category constructors
 * @since 0.1.0
 */
export const show = (id: string): Effect.Effect<Detail, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const valid = yield* Validate.uuid(id, "id")
    const found = yield* run(Sql.show, { id: valid })
    if (Option.isNone(found)) return yield* notFound("dead letter", valid)
    return { ...toLetter(found.value), workId: found.value.workId, payload: found.value.payload }
  })

/**
 * Moves the letter back into `wh_perspective_events` (attempts 0, no backoff) and deletes it, in one
 * transaction. `partitionCount` must match the workers' (default 10,000).
 *
 * @category constructors
 * @since 0.1.0
 */
export const retry = (
  id: string,
  options: { readonly partitionCount?: number | undefined } = {}
): Effect.Effect<Retried, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const valid = yield* Validate.uuid(id, "id")
    const partitions = yield* Validate.positiveInt(options.partitionCount ?? 10_000, "partition-count")
    // The workers are told at commit: a tenant's are started by this alone (its fleet polls no idle tenant).
    const retried = yield* orFailure(
      PgClient.withTransaction(
        Effect.tap(run(Sql.retry, { id: valid, partitionCount: partitions }), (row) =>
          Option.isSome(row) ? run(PgOperations.Work.wake) : Effect.void
        )
      )
    )
    if (Option.isNone(retried)) return yield* notFound("dead letter", valid)
    const { workId, streamId, perspectiveName, eventId } = retried.value
    return { id: valid, workId, streamId, perspective: perspectiveName, eventId }
  }).pipe(Effect.withSpan("whizbang.dead_letters.retry", { attributes: { "whizbang.dead_letter_id": id } }))

/**
 * Deletes the letter for good.
 *
 * @category constructors
 * @since 0.1.0
 */
export const discard = (id: string): Effect.Effect<void, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const valid = yield* Validate.uuid(id, "id")
    const discarded = yield* run(Sql.discard, { id: valid })
    if (discarded === 0) return yield* notFound("dead letter", valid)
  })
