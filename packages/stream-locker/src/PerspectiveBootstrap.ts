/**
 * Bootstrap: builds a perspective's models from history when it is added to a service whose streams already
 * have events. For every stream with events of the types the perspective handles and no cursor for it, the
 * events are replayed in event-id order and the model, snapshots and cursor are written in one transaction.
 *
 * It runs without the stream lock (reason `"bootstrap"` in the reference): there is no cursor to lock yet, and
 * the write is idempotent and guarded — the cursor is inserted `ON CONFLICT DO NOTHING`, and when a cursor
 * appeared meanwhile (the worker got there first) nothing of that stream is written. Work rows the replay
 * covered are deleted in the same transaction, so a worker's stale completion of them rolls back.
 *
 * **When to use**: `layer` runs it at start-up, before the layers that depend on it (put it under the worker so
 * the worker starts after it); `bootstrap` is the effect to call from a CLI, with `onProgress` receiving
 * "streams done / total" after every stream.
 *
 * **Gotchas**: run it before the worker applies new events of the perspective. A stream whose first new event was
 * applied by a worker before its bootstrap has a cursor and is skipped, with a model that lacks the history.
 *
 * @since 0.1.0
 */
import { type EventRegistry, type Perspective, PerspectiveRunner } from "@whizbang/core"
import { PgClient, PgPerspectiveSnapshots, type PostgresError } from "@whizbang/postgres"
import { Effect, Layer, Option } from "effect"
import * as Replay from "./internal/replay.js"
import * as Sql from "./sql/bootstrap.js"
import type { RebuildFailed } from "./StreamLockError.js"

/**
 * Progress after one stream.
 *
 * @category models
 * @since 0.1.0
 */
export interface Progress {
  readonly perspectiveName: string
  readonly streamId: string
  /** `built`, or `skipped` when a cursor appeared meanwhile. */
  readonly outcome: "built" | "skipped"
  readonly done: number
  readonly total: number
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Config {
  readonly events: EventRegistry.EventRegistry
  readonly perspective: Perspective.Any
  readonly snapshots?: PgPerspectiveSnapshots.Input
  /** Called after every stream, in order. */
  readonly onProgress?: (progress: Progress) => Effect.Effect<void>
}

/**
 * What a bootstrap did.
 *
 * @category models
 * @since 0.1.0
 */
export interface Summary {
  readonly perspectiveName: string
  readonly total: number
  readonly built: number
  readonly skipped: number
}

/**
 * Builds the models of every stream the perspective has history on and no cursor for.
 *
 * @category constructors
 * @since 0.1.0
 */
export const bootstrap = (
  config: Config
): Effect.Effect<Summary, RebuildFailed | PostgresError.PostgresError | PostgresError.PostgresConfigError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    const snapshots = yield* PgPerspectiveSnapshots.decode(config.snapshots)
    const runner = PerspectiveRunner.make(config.perspective)
    const perspectiveName = runner.perspectiveName
    const streams = yield* client.query<{ stream_id: string }>(Sql.streamsWithoutCursor, [runner.eventTypes, perspectiveName])
    const total = streams.length
    let built = 0
    let skipped = 0
    for (const { stream_id: streamId } of streams) {
      const folded = yield* Replay.fold({ client, events: config.events, runner, streamId, start: Option.none(), every: snapshots.every, operation: "bootstrap" })
      const wrote = folded.last === undefined ? false : yield* client.withTransaction(Effect.gen(function* () {
        const inserted = yield* client.query(Sql.insertCursor, [streamId, perspectiveName, folded.last!.event_id])
        if (inserted.length === 0) return false
        yield* Replay.commit(client, streamId, perspectiveName, folded, snapshots.keep, folded.eventIds.length)
        return true
      }))
      if (wrote) built++
      else skipped++
      if (config.onProgress) yield* config.onProgress({ perspectiveName, streamId, outcome: wrote ? "built" : "skipped", done: built + skipped, total })
    }
    yield* Effect.logInfo(`bootstrap of ${perspectiveName}: ${built} stream(s) built, ${skipped} skipped`)
    return { perspectiveName, total, built, skipped }
  })

/**
 * Runs {@link bootstrap} for each perspective when the layer is built (start-up, blocking).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  config: Omit<Config, "perspective"> & { readonly perspectives: ReadonlyArray<Perspective.Any> }
): Layer.Layer<never, RebuildFailed | PostgresError.PostgresError | PostgresError.PostgresConfigError, PgClient.PgClient> =>
  Layer.effectDiscard(Effect.forEach(config.perspectives, (perspective) => bootstrap({ ...config, perspective }), { discard: true }))
