/**
 * Perspective snapshots in `wh_perspective_snapshots`: the encoded model of a (stream, perspective) as of one
 * event, so a rewind replays from the latest snapshot before a late event instead of from the stream's start.
 *
 * - The completion transaction (`PgWorkCoordinator`) writes a snapshot whenever a pair's applied-event count (the
 *   row's `version`) crosses a multiple of `every` (default 100), and prunes the pair to its newest `keep`
 *   (default 5). The snapshot is taken at the last event of the committed batch, so with large batches it may
 *   land a few events after the exact multiple; it is still exact for the event it names.
 * - A rewind deletes the snapshots at or after its trigger (they lack the late event) and writes fresh ones.
 *
 * Every statement is set-based and runs on the caller's transaction when there is one.
 *
 * @since 0.1.0
 */
import { Effect, type Option } from "effect"
import type { PgClient } from "./PgClient.js"
import { type PostgresError, PostgresConfigError } from "./PostgresError.js"
import * as Sql from "./sql/snapshots.js"

/**
 * Snapshot options as given.
 *
 * @category models
 * @since 0.1.0
 */
export interface Input {
  /** Snapshot every N applied events per (stream, perspective). Default 100. */
  readonly every?: number
  /** Keep the newest M snapshots per (stream, perspective). Default 5. */
  readonly keep?: number
}

/**
 * Validated snapshot options.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  readonly every: number
  readonly keep: number
}

/**
 * @category constants
 * @since 0.1.0
 */
export const defaults: Options = { every: 100, keep: 5 }

/**
 * Validates options: both positive integers, else a `PostgresConfigError` naming the option.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decode = (input: Input = {}): Effect.Effect<Options, PostgresConfigError> => {
  const every = input.every ?? defaults.every
  const keep = input.keep ?? defaults.keep
  for (const [option, value] of [
    ["snapshots.every", every],
    ["snapshots.keep", keep]
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1) {
      return Effect.fail(new PostgresConfigError({ option, message: `${option} must be a positive integer, got ${value}` }))
    }
  }
  return Effect.succeed({ every, keep })
}

/**
 * One snapshot: the encoded model of a pair after `eventId`.
 *
 * @category models
 * @since 0.1.0
 */
export interface Snapshot {
  readonly streamId: string
  readonly perspectiveName: string
  readonly eventId: string
  readonly data: unknown
}

/**
 * Writes snapshots and prunes their pairs to the newest `keep`, in two statements whatever the count.
 *
 * @category combinators
 * @since 0.1.0
 */
export const write = (client: PgClient["Service"], snapshots: ReadonlyArray<Snapshot>, keep: number): Effect.Effect<void, PostgresError> =>
  snapshots.length === 0
    ? Effect.void
    : Effect.gen(function* () {
        const streamIds = snapshots.map((s) => s.streamId)
        const perspectiveNames = snapshots.map((s) => s.perspectiveName)
        yield* Sql.insertSnapshots(client, {
          streamIds,
          perspectiveNames,
          eventIds: snapshots.map((s) => s.eventId),
          data: snapshots.map((s) => JSON.stringify(s.data))
        })
        yield* Sql.pruneSnapshots(client, { streamIds, perspectiveNames, keep })
      })

/**
 * The newest snapshot of a pair strictly before `eventId`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const latestBefore = (
  client: PgClient["Service"],
  streamId: string,
  perspectiveName: string,
  eventId: string
): Effect.Effect<Option.Option<{ readonly eventId: string; readonly data: unknown }>, PostgresError> =>
  Sql.latestBefore(client, { streamId, perspectiveName, eventId })

/**
 * Deletes the snapshots of a pair at or after `eventId` (they no longer describe the stream after a late event).
 *
 * @category combinators
 * @since 0.1.0
 */
export const deleteFrom = (
  client: PgClient["Service"],
  streamId: string,
  perspectiveName: string,
  eventId: string
): Effect.Effect<void, PostgresError> => Sql.deleteFrom(client, { streamId, perspectiveName, eventId })

/**
 * Deletes every snapshot of a pair.
 *
 * @category combinators
 * @since 0.1.0
 */
export const deleteAll = (client: PgClient["Service"], streamId: string, perspectiveName: string): Effect.Effect<void, PostgresError> =>
  Sql.deleteAll(client, { streamId, perspectiveName })

/**
 * Every snapshot of a pair, oldest first (inspection and tests).
 *
 * @category combinators
 * @since 0.1.0
 */
export const list = (
  client: PgClient["Service"],
  streamId: string,
  perspectiveName: string
): Effect.Effect<ReadonlyArray<Snapshot>, PostgresError> =>
  Effect.map(Sql.list(client, { streamId, perspectiveName }), (rows) =>
    rows.map((r) => ({ streamId, perspectiveName, eventId: r.eventId, data: r.data }))
  )
