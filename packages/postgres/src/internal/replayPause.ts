/**
 * Live work first, for a replay of history: before each chunk, the replayer waits while live work waits — another
 * tenant's work in the process (`otherLiveWork`, in memory), or its own schema's oldest pending live event older than
 * the target (`liveLagOverTarget`, one statement) — for at most as long as its last chunk took, and never more than a
 * second. So a replay keeps at least half its pace when the lag has another cause (a machine short of CPU) and
 * pausing it would not bring the lag down.
 *
 * @internal
 */
import { Duration, Effect } from "effect"

/** How often a paused replayer looks again. */
export const pauseMillis = 20
/** The longest pause before a chunk. */
export const maxPauseMillis = 1_000

/** Waits as described above; returns the milliseconds waited. */
export const pause = <E>(options: {
  readonly otherLiveWork: Effect.Effect<boolean>
  readonly liveLagOverTarget: Effect.Effect<boolean, E>
  /** The replayer's last chunk, in milliseconds: the pause's bound. */
  readonly lastChunkMillis: number
}): Effect.Effect<number, E> =>
  Effect.gen(function* () {
    const limit = Math.min(maxPauseMillis, options.lastChunkMillis)
    for (let waited = 0; ; waited += pauseMillis) {
      if (waited >= limit) return waited
      if (!(yield* options.otherLiveWork) && !(yield* options.liveLagOverTarget)) return waited
      yield* Effect.sleep(Duration.millis(pauseMillis))
    }
  })
