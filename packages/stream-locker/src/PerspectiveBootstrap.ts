/**
 * Bootstrap: builds a perspective's models from history when it is added to a service whose streams already
 * have events. For every stream with events of the types the perspective handles and no cursor for it, the
 * events are replayed in event-id order and the model, snapshots and cursor are written in one transaction.
 *
 * Each stream is rebuilt under the stream lock, reason `"bootstrap"`: the cursor is first created as a placeholder
 * that already carries this instance's lock (`ON CONFLICT DO NOTHING`: when a cursor exists — the worker got there
 * first — nothing of that stream is written), kept alive and released like any `withStreamLock`. While it is held
 * workers neither claim nor apply the pair, and a worker completion fetched before it is refused (the cursor is
 * locked, or moved). The commit is fenced on still holding the lock; work rows the replay covered are deleted in
 * the same transaction. A failed rebuild removes its placeholder, so a later run tries the stream again.
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
import { type EventRegistry, InstanceProvider, type Perspective, PerspectiveRunner } from "@whizbang/core"
import { PgClient, PgPerspectiveSnapshots, type PostgresError } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Duration, Effect, Layer, Option } from "effect"
import * as Replay from "./internal/replay.js"
import { PerspectiveStreamLocker } from "./PerspectiveStreamLocker.js"
import { RebuildFailed, type StreamLockError, type StreamLockLost } from "./StreamLockError.js"
import { withStreamLock } from "./withStreamLock.js"

const Bootstraps = PgOperations.Bootstraps

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
): Effect.Effect<
  Summary,
  RebuildFailed | StreamLockError | StreamLockLost | PostgresError.PostgresError | PostgresError.PostgresConfigError,
  PgClient.PgClient | PerspectiveStreamLocker | InstanceProvider.InstanceProvider
> =>
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    const locker = yield* PerspectiveStreamLocker
    const { instanceId } = yield* InstanceProvider.InstanceProvider
    const snapshots = yield* PgPerspectiveSnapshots.decode(config.snapshots)
    const runner = PerspectiveRunner.make(config.perspective)
    const perspectiveName = runner.perspectiveName
    const timeout = Duration.toMillis(locker.options.lockTimeout)
    const streams = yield* Bootstraps.streamsWithoutCursor(client, { eventTypes: runner.eventTypes, perspectiveName })
    const total = streams.length
    let built = 0
    let skipped = 0
    const rebuild = (streamId: string) =>
      Effect.gen(function* () {
        const folded = yield* Replay.fold({
          client,
          events: config.events,
          runner,
          streamId,
          start: Option.none(),
          every: snapshots.every,
          operation: "bootstrap"
        })
        yield* client.withTransaction(
          Effect.gen(function* () {
            if (Option.isNone(yield* PgOperations.StreamLocks.fence(client, { streamId, perspectiveName, instanceId }))) {
              return yield* new RebuildFailed({
                operation: "bootstrap",
                streamId,
                perspectiveName,
                reason: "the stream lock was lost before the commit"
              })
            }
            yield* Replay.commit(client, streamId, perspectiveName, folded, snapshots.keep, folded.eventIds.length)
            if (folded.last !== undefined) {
              yield* Bootstraps.finishCursor(client, { streamId, perspectiveName, lastEventId: folded.last.eventId })
            }
          })
        )
        return folded.last !== undefined
      })
    const dropPlaceholder = (streamId: string) => Bootstraps.dropPlaceholder(client, { streamId, perspectiveName, instanceId })
    for (const { streamId } of streams) {
      const placed =
        (yield* Bootstraps.insertLockedCursor(client, { streamId, perspectiveName, instanceId, lockTimeoutMillis: timeout })) > 0
      const wrote = !placed
        ? false
        : yield* withStreamLock(streamId, perspectiveName, "bootstrap", rebuild(streamId)).pipe(
            Effect.map((done) => Option.getOrElse(done, () => false)),
            Effect.tap((done) => (done ? Effect.void : dropPlaceholder(streamId))),
            Effect.onError(() => Effect.ignore(dropPlaceholder(streamId)))
          )
      if (wrote) built++
      else skipped++
      if (config.onProgress)
        yield* config.onProgress({ perspectiveName, streamId, outcome: wrote ? "built" : "skipped", done: built + skipped, total })
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
): Layer.Layer<
  never,
  RebuildFailed | StreamLockError | StreamLockLost | PostgresError.PostgresError | PostgresError.PostgresConfigError,
  PgClient.PgClient | PerspectiveStreamLocker | InstanceProvider.InstanceProvider
> => Layer.effectDiscard(Effect.forEach(config.perspectives, (perspective) => bootstrap({ ...config, perspective }), { discard: true }))
