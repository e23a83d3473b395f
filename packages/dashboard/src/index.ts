/**
 * The Whizbang operations page: `Dashboard.serve` (what `whizbang dashboard` runs), and the snapshot it shows.
 *
 * @since 0.4.0
 */

/**
 * @since 0.4.0
 */
export * as Dashboard from "./Dashboard.js"

/**
 * @since 0.4.0
 */
export * as DashboardError from "./DashboardError.js"

/**
 * @since 0.4.0
 */
export * as DashboardSnapshot from "./DashboardSnapshot.js"
