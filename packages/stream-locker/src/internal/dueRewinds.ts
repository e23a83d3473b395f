/**
 * The debounce of `PgPerspectiveRewinder`: which of the targets are flagged, and which of those are due — no new
 * late arrival for the sliding window, or flagged for the cap (`force` ignores both) — in one read; the due ones
 * are rewound, the others answered `notFlagged` or `notDue`.
 *
 * @internal
 */
import type { PerspectiveRewinder } from "@whizbang/core"
import type { OutageLog } from "@whizbang/core/internal"
import { PgOperations } from "@whizbang/postgres/internal"
import { Effect } from "effect"
import { type Rewinding, rewindOne } from "./rewindOne.js"

const Rewinds = PgOperations.Rewinds

/** The debounce of one rewinder. @internal */
export interface Debounce {
  readonly windowMillis: number
  readonly capMillis: number
  readonly flaggedLog: OutageLog.OutageLog
}

const key = (t: PerspectiveRewinder.Target) => `${t.streamId}|${t.perspectiveName}`

/** Whether each flagged target is due, by {@link key}; a target not flagged is absent. */
const flagged = (rewinding: Rewinding, debounce: Debounce, targets: ReadonlyArray<PerspectiveRewinder.Target>, force: boolean) =>
  Rewinds.flagged(rewinding.client, {
    streamIds: targets.map((t) => t.streamId),
    perspectiveNames: targets.map((t) => t.perspectiveName),
    windowMillis: debounce.windowMillis,
    capMillis: debounce.capMillis,
    force
  }).pipe(Effect.map((rows) => new Map(rows.map((r) => [key(r), r.due]))))

/**
 * Rewinds the due targets, one result per target in order. Never fails: if the flags cannot be read, every target
 * is `failed`.
 *
 * @internal
 */
export const rewindDue = (
  rewinding: Rewinding,
  debounce: Debounce,
  targets: ReadonlyArray<PerspectiveRewinder.Target>,
  force: boolean
): Effect.Effect<ReadonlyArray<PerspectiveRewinder.Result>> =>
  flagged(rewinding, debounce, targets, force).pipe(
    Effect.tap(() => debounce.flaggedLog.succeeded),
    Effect.flatMap((due) =>
      Effect.forEach(targets, (t): Effect.Effect<PerspectiveRewinder.Result> => {
        const state = due.get(key(t))
        if (state === undefined) return Effect.succeed({ ...t, outcome: "notFlagged", replayedEventIds: [] })
        if (!state) return Effect.succeed({ ...t, outcome: "notDue", replayedEventIds: [] })
        return rewindOne(rewinding, t)
      })
    ),
    Effect.catchCause((cause) =>
      Effect.as(
        debounce.flaggedLog.failed(cause),
        targets.map((t): PerspectiveRewinder.Result => ({ ...t, outcome: "failed", replayedEventIds: [], error: String(cause) }))
      )
    )
  )
