/**
 * The claim's background tier at rest. Background work (a perspective version's history as work rows, the events
 * routed to a version being built) on a stream whose history is still planned for the version's replay
 * (`wh_perspective_backfill`) cannot be applied before the replay has passed that stream: the fetch returns nothing
 * of it, the cycle moves nothing, and the worker holds the stream back. While a replay runs, those rows are most of the
 * background index — every event appended since the version was registered, on streams the replay has not reached —
 * so each claim walked them all again (bench v at 1,000 appends/s: a claim over about 8,000 such rows took 74 ms,
 * the claims held a core between them, and the live version's lag went from p50 15 to 103 ms with nothing replayed).
 *
 * So when a claim took streams that came back with nothing to apply (a replay's planned history, a stream lock) and
 * none of the background work it fetched could be applied, the coordinator's next claims leave background streams
 * out for {@link restMillis}: live work is claimed as before, and the first claim after the rest looks at the
 * background tier again. Background work the rest delays is at most
 * {@link restMillis} later; it fires no receptors, and the version's cut-over waits for it as before.
 *
 * @internal
 */
import type { WorkCoordinator } from "@whizbang/core"
import { Clock, Effect } from "effect"

/** How long the background tier rests after a claim whose background tier found nothing to apply. */
export const restMillis = 1_000

/**
 * Whether a claim's background tier found nothing to apply: it took streams that came back with nothing fetched (the
 * fetch returns nothing of a pair whose history is still planned, or under a stream lock), and no background row
 * it fetched can be applied.
 */
export const foundNothing = (streams: ReadonlyArray<string>, pending: ReadonlyArray<WorkCoordinator.PendingEvent>): boolean => {
  const withRows = new Set<string>()
  for (const e of pending) {
    if (e.fires === false && e.blocked !== true) return false
    withRows.add(e.streamId)
  }
  return streams.some((id) => !withRows.has(id))
}

/** The rest of one coordinator: `open` before a claim, `after` with what it fetched. */
export const make = () => {
  let until = Number.NEGATIVE_INFINITY
  return {
    /** Whether this claim takes background streams. */
    open: Effect.map(Clock.currentTimeMillis, (now) => now >= until),
    /** Starts a rest when the claim's background tier found nothing to apply ({@link foundNothing}). */
    after: (streams: ReadonlyArray<string>, pending: ReadonlyArray<WorkCoordinator.PendingEvent>): Effect.Effect<void> =>
      foundNothing(streams, pending)
        ? Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.sync(() => {
              until = now + restMillis
            })
          )
        : Effect.void
  }
}
