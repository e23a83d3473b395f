/**
 * The PerspectiveRewinder port: rebuilds a (stream, perspective) whose cursor is flagged RewindRequired because
 * an event arrived with an id lower than one already applied (a late arrival).
 *
 * The worker never applies a flagged pair's work itself: its fetch returns one marker row
 * (`PendingEvent.rewindRequired`), and the cycle hands the pair to the rewinder found in context. Without a
 * rewinder in context, flagged pairs simply wait (nothing is applied out of order). The Postgres rewinder lives
 * in `@whizbang/stream-locker` (`PgPerspectiveRewinder`): it debounces, takes the stream lock, replays from the
 * latest snapshot before the trigger and commits model, cursor and covered work rows in one transaction.
 *
 * **Gotchas**: `rewindFlagged` never fails. A rewind that cannot run now (debounce window still open, lock held
 * by another instance) or that fails is reported in its result and retried at a later cycle.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"

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
 * The rewinder as a service; optional for the worker.
 *
 * @category services
 * @since 0.1.0
 */
export class PerspectiveRewinder extends Context.Service<PerspectiveRewinder, Shape>()("@whizbang/core/PerspectiveRewinder") {}
