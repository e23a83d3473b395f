/**
 * Cursor status flags of a (stream, perspective) pair, as stored in `wh_perspective_cursors.status`.
 *
 * The values are bit flags and match the original library, so existing dashboards and SQL
 * (`status & 4 = 4` for failed cursors) keep working.
 *
 * @since 0.1.0
 */

/**
 * The flag values.
 *
 * @category models
 * @since 0.1.0
 */
export const PerspectiveStatus = {
  None: 0,
  /** Set with CatchingUp by a commit that left more of the pair's work pending, which the worker drains next. */
  Processing: 1,
  /** Set by a commit that applied everything the pair had pending (clears Processing, CatchingUp, Failed). */
  Completed: 2,
  /** Set by a failed apply, with the error; the cursor keeps its position. */
  Failed: 4,
  /** The pair is behind: its last commit filled `perspectiveBatchSize` and more work is pending. */
  CatchingUp: 8,
  /** A late arrival (an event below the cursor) was detected; a rewind clears it. */
  RewindRequired: 32
} as const

/**
 * A combination of {@link PerspectiveStatus} flags.
 *
 * @category models
 * @since 0.1.0
 */
export type PerspectiveStatus = number

/**
 * Returns `true` when every bit of `flag` is set in `status`.
 *
 * @category predicates
 * @since 0.1.0
 */
export const has = (status: PerspectiveStatus, flag: PerspectiveStatus): boolean => (status & flag) === flag
