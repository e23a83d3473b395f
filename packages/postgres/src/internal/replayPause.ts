/**
 * Live work first, for a replay of history: before each chunk, the replayer waits while live work waits — another
 * tenant's work in the process (`otherLiveWork`, in memory), or its own schema's oldest pending live event older than
 * the target (`liveLagOverTarget`, one statement) — for at most as long as its last chunk took, and never more than a
 * second. So a replay keeps at least half its pace when the lag has another cause (a machine short of CPU) and
 * pausing it would not bring the lag down.
 *
 * @internal
 */
import { Clock, Duration, Effect } from "effect"

/** How often a paused replayer looks again. */
export const pauseMillis = 20
/** The longest pause before a chunk. */
export const maxPauseMillis = 1_000

/**
 * Waits as described above; returns the milliseconds waited. The bound is wall-clock time (the {@link Clock}), so the
 * statements that look at the lag, and an event loop slow to wake the sleeps, count towards it. Counting only the
 * sleeps let a pause outlast its bound by both under load, and the replay fall below half its pace (scenario v at
 * 1,000 live appends/s: 0.43x the baseline before, 0.64x after, one run each).
 */
export const pause = <E>(options: {
  readonly otherLiveWork: Effect.Effect<boolean>
  readonly liveLagOverTarget: Effect.Effect<boolean, E>
  /** The replayer's last chunk, in milliseconds: the pause's bound. */
  readonly lastChunkMillis: number
}): Effect.Effect<number, E> =>
  Effect.gen(function* () {
    const limit = Math.min(maxPauseMillis, options.lastChunkMillis)
    const started = yield* Clock.currentTimeMillis
    const elapsed = Effect.map(Clock.currentTimeMillis, (now) => now - started)
    while (true) {
      const waited = yield* elapsed
      if (waited >= limit) return waited
      if (!(yield* options.otherLiveWork) && !(yield* options.liveLagOverTarget)) return yield* elapsed
      // The looks took time too: never sleep past the bound.
      yield* Effect.sleep(Duration.millis(Math.max(0, Math.min(pauseMillis, limit - (yield* elapsed)))))
    }
  })
