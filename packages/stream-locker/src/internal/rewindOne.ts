/**
 * One rewind of one (stream, perspective), as `PgPerspectiveRewinder` runs it: under the stream lock (reason
 * `"rewind"`; not acquired -> `locked`, retried next cycle), load the latest snapshot strictly before the trigger (or
 * start from the initial model), replay the stream's events, then commit in ONE transaction fenced on still holding
 * the lock. The outcome is counted in the rewinder's `stats` and reported to its hooks; a failure is logged and
 * retried at a later cycle.
 *
 * @internal
 */
import type { EventRegistry, InstanceProvider, PerspectiveRegistry, PerspectiveRewinder } from "@whizbang/core"
import { OutageLog } from "@whizbang/core/internal"
import { type PgClient, PgPerspectiveSnapshots } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { type Context, Effect, Option, Ref } from "effect"
import type { PerspectiveStreamLocker } from "../PerspectiveStreamLocker.js"
import type { Hooks, Stats } from "../PgPerspectiveRewinder.js"
import { RebuildFailed } from "../StreamLockError.js"
import { withStreamLock } from "../withStreamLock.js"
import * as Replay from "./replay.js"

const Rewinds = PgOperations.Rewinds

/** What every rewind of one rewinder shares. @internal */
export interface Rewinding {
  readonly client: PgClient.PgClient["Service"]
  readonly instanceId: string
  readonly context: Context.Context<PerspectiveStreamLocker | InstanceProvider.InstanceProvider>
  readonly registry: PerspectiveRegistry.Shape
  readonly events: EventRegistry.EventRegistry
  readonly snapshots: PgPerspectiveSnapshots.Options
  readonly hooks: Hooks
  readonly stats: Ref.Ref<Stats>
}

/** The replay and its fenced commit, under the lock: the replayed event ids, or none if the pair is no longer flagged. */
const replayUnderLock = (rewinding: Rewinding, target: PerspectiveRewinder.Target) =>
  Effect.gen(function* () {
    const { client, hooks, snapshots, instanceId } = rewinding
    const { perspectiveName, streamId } = target
    const runner = yield* rewinding.registry.get(perspectiveName)
    if (hooks.onRewindStarted) yield* hooks.onRewindStarted(target)
    const flag = yield* Rewinds.trigger(client, { streamId, perspectiveName })
    if (Option.isNone(flag)) return Option.none<ReadonlyArray<string>>() // another instance finished it meanwhile
    const trigger = flag.value.triggerId
    const start = trigger === null ? Option.none() : yield* PgPerspectiveSnapshots.latestBefore(client, streamId, perspectiveName, trigger)
    const folded = yield* Replay.fold({
      client,
      events: rewinding.events,
      runner,
      streamId,
      start,
      every: snapshots.every,
      operation: "rewind"
    })
    if (hooks.onReplayed) yield* hooks.onReplayed(target, folded.eventIds.length)
    yield* client.withTransaction(
      Effect.gen(function* () {
        const fenced = yield* PgOperations.StreamLocks.fence(client, { streamId, perspectiveName, instanceId })
        if (Option.isNone(fenced)) {
          return yield* new RebuildFailed({
            operation: "rewind",
            streamId,
            perspectiveName,
            reason: "the stream lock was lost before the commit"
          })
        }
        if (trigger !== null) yield* PgPerspectiveSnapshots.deleteFrom(client, streamId, perspectiveName, trigger)
        yield* Replay.commit(client, streamId, perspectiveName, folded, snapshots.keep)
        yield* Rewinds.finish(client, { streamId, perspectiveName, lastEventId: folded.last?.eventId ?? null })
      })
    )
    return Option.some(folded.eventIds)
  })

/**
 * Rewinds `target` under its stream lock, whatever the debounce says: `locked`, `notFlagged`, `rewound` or `failed`,
 * counted in `stats`. Never fails.
 *
 * @internal
 */
export const rewindOne = (rewinding: Rewinding, target: PerspectiveRewinder.Target): Effect.Effect<PerspectiveRewinder.Result> => {
  const { stats, hooks } = rewinding
  return withStreamLock(target.streamId, target.perspectiveName, "rewind", replayUnderLock(rewinding, target)).pipe(
    Effect.provide(rewinding.context),
    Effect.flatMap((locked): Effect.Effect<PerspectiveRewinder.Result> => {
      if (Option.isNone(locked)) {
        return Effect.as(
          Ref.update(stats, (s) => ({ ...s, locked: s.locked + 1 })),
          { ...target, outcome: "locked", replayedEventIds: [] }
        )
      }
      if (Option.isNone(locked.value)) return Effect.succeed({ ...target, outcome: "notFlagged", replayedEventIds: [] })
      const ids = locked.value.value
      const result: PerspectiveRewinder.Result = { ...target, outcome: "rewound", replayedEventIds: ids }
      return Ref.update(stats, (s) => ({ ...s, rewound: s.rewound + 1, replayedEvents: s.replayedEvents + ids.length })).pipe(
        Effect.andThen(Effect.logDebug(`rewound (${target.streamId}, ${target.perspectiveName}): ${ids.length} event(s) replayed`)),
        Effect.andThen(hooks.onRewound ? Effect.ignore(hooks.onRewound(result)) : Effect.void),
        Effect.as(result)
      )
    }),
    Effect.catchCause((cause) => {
      const result: PerspectiveRewinder.Result = { ...target, outcome: "failed", replayedEventIds: [], error: String(cause) }
      const what = `rewind of (${target.streamId}, ${target.perspectiveName}) failed`
      return Ref.update(stats, (s) => ({ ...s, failed: s.failed + 1 })).pipe(
        // The message at warning level, the stack trace at debug level.
        Effect.andThen(Effect.logWarning(`${what}: ${OutageLog.causeMessage(cause)}; retrying at a later cycle`)),
        Effect.andThen(Effect.logDebug(what, cause)),
        Effect.andThen(hooks.onRewindFailed ? Effect.ignore(hooks.onRewindFailed(result)) : Effect.void),
        Effect.as(result)
      )
    })
  )
}
