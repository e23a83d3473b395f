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
  Processing: 1,
  Completed: 2,
  Failed: 4,
  CatchingUp: 8,
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
