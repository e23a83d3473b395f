/**
 * The PerspectiveRewinder port: rebuilds a (stream, perspective) whose cursor is flagged RewindRequired because
 * an event arrived with an id lower than one already applied (a late arrival).
 *
 * The worker never applies a flagged pair's work itself: its fetch returns one marker row
 * (`PendingEvent.rewindRequired`), and the cycle hands the pair to the rewinder. The worker requires one (its
 * layer does not type-check without it): a flagged pair nobody rewinds would wait forever. The Postgres rewinder lives
 * in `@whizbang/stream-locker` (`PgPerspectiveRewinder`): it debounces, takes the stream lock, replays from the
 * latest snapshot before the trigger and commits model, cursor and covered work rows in one transaction.
 *
 * **Gotchas**: `rewindFlagged` never fails. A rewind that cannot run now (debounce window still open, lock held
 * by another instance) or that fails is reported in its result and retried at a later cycle.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"

/**
 * One (stream, perspective) pair.
 *
 * @category models
 * @since 0.1.0
 */
export interface Target {
  readonly streamId: string
  readonly perspectiveName: string
}

/**
 * What happened to one flagged pair: `rewound` (committed), `notFlagged` (nothing to do any more), `notDue`
 * (debounce window still open), `locked` (another instance holds the stream lock) or `failed` (logged, counted,
 * retried later).
 *
 * @category models
 * @since 0.1.0
 */
export type Outcome = "rewound" | "notFlagged" | "notDue" | "locked" | "failed"

/**
 * The result of one pair.
 *
 * @category models
 * @since 0.1.0
 */
export interface Result extends Target {
  readonly outcome: Outcome
  /** Ids of the events replayed (after the starting snapshot), in order; empty unless `rewound`. */
  readonly replayedEventIds: ReadonlyArray<string>
  /** Why it failed, when `failed`. */
  readonly error?: string
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  /** Rewinds those of `targets` that are flagged and due; pairs that are not are reported, never failed. */
  readonly rewindFlagged: (targets: ReadonlyArray<Target>) => Effect.Effect<ReadonlyArray<Result>>
}

/**
 * The rewinder as a service; required by the worker.
 *
 * @category services
 * @since 0.1.0
 */
export class PerspectiveRewinder extends Context.Service<PerspectiveRewinder, Shape>()("@whizbang/core/PerspectiveRewinder") {}

/**
 * A rewinder for pipelines whose coordinator never flags a pair (the in-memory pipeline, tests of other
 * parts): every flagged pair that reaches it is logged as an error and reported `failed`, so a composition
 * that should have had a real rewinder says so instead of stalling silently. Use the Postgres rewinder
 * (`PgPerspectiveRewinder` in `@whizbang/stream-locker`) with the Postgres pipeline.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerUnsupported: Layer.Layer<PerspectiveRewinder> = Layer.succeed(
  PerspectiveRewinder,
  PerspectiveRewinder.of({
    rewindFlagged: (targets) =>
      Effect.as(
        Effect.forEach(
          targets,
          (t) =>
            Effect.logError(
              `(${t.streamId}, ${t.perspectiveName}) needs a rewind (late arrival) but this pipeline has no rewinder: provide PgPerspectiveRewinder.layer (or use Whizbang.layer)`
            ),
          { discard: true }
        ),
        targets.map((t): Result => ({ ...t, outcome: "failed", replayedEventIds: [], error: "no rewinder in this pipeline" }))
      )
  })
)
