/**
 * Dead letters: list, show, retry (back into the work queue as a fresh row with attempts 0, and the letter
 * deleted, in one transaction) and discard. `whizbang dead-letters` runs these; an admin UI can too.
 *
 * @since 0.1.0
 */
import { PgClient } from "@whizbang/postgres"
import { Effect } from "effect"
import { iso, orFailure, query } from "./internal/database.js"
import * as Validate from "./internal/validate.js"
import { notFound, type OperationError } from "./OperationError.js"
import * as Sql from "./sql/deadLetters.js"

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

const toLetter = (r: Record<string, unknown>): DeadLetter => ({
  id: String(r.id),
  perspective: String(r.perspective_name),
  streamId: String(r.stream_id),
  eventId: String(r.event_id),
  eventType: String(r.event_type),
  attempts: Number(r.attempts),
  error: String(r.error),
  createdAt: iso(r.created_at)
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
    const rows = yield* query(Sql.list, [perspective, options.limit ?? 100])
    return rows.map(toLetter)
  })

/**
 * @category constructors
 * @since 0.1.0
 */
export const show = (id: string): Effect.Effect<Detail, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const valid = yield* Validate.uuid(id, "id")
    const [row] = yield* query(Sql.show, [valid])
    if (row === undefined) return yield* notFound("dead letter", valid)
    return { ...toLetter(row), workId: String(row.work_id), payload: row.payload }
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
    const [row] = yield* orFailure(PgClient.withTransaction(query(Sql.retry, [valid, partitions])))
    if (row === undefined) return yield* notFound("dead letter", valid)
    return {
      id: valid,
      workId: String(row.work_id),
      streamId: String(row.stream_id),
      perspective: String(row.perspective_name),
      eventId: String(row.event_id)
    }
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
    const rows = yield* query(Sql.discard, [valid])
    if (rows.length === 0) return yield* notFound("dead letter", valid)
  })
