/**
 * Whizbang on PostgreSQL.
 *
 * What only Whizbang's own packages share (`PerspectiveTable`, `PgOperations`) is the `@whizbang/postgres/internal`
 * entry: not for applications, no semver guarantees.
 *
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as PgClient from "./PgClient.js"

/**
 * @since 0.1.0
 */
export * as PgMigrator from "./PgMigrator.js"

/**
 * @since 0.1.0
 */
export * as PostgresError from "./PostgresError.js"

/**
 * @since 0.1.0
 */
export * as SchemaReady from "./SchemaReady.js"

/**
 * @since 0.1.0
 */
export * as PgEventStore from "./PgEventStore.js"

/**
 * @since 0.1.0
 */
export * as PgNotificationListener from "./PgNotificationListener.js"

/**
 * @since 0.1.0
 */
export * as PgPerspectiveStore from "./PgPerspectiveStore.js"

/**
 * @since 0.1.0
 */
export * as PgWorkCoordinator from "./PgWorkCoordinator.js"

/**
 * @since 0.1.0
 */
export * as PgInstanceRegistry from "./PgInstanceRegistry.js"

/**
 * @since 0.1.0
 */
export * as PgPerspectivePipeline from "./PgPerspectivePipeline.js"

/**
 * @since 0.1.0
 */
export * as PgLifecycleStore from "./PgLifecycleStore.js"

/**
 * @since 0.1.0
 */
export * as PgStatus from "./PgStatus.js"

/**
 * @since 0.1.0
 */
export * as PgWatchdog from "./PgWatchdog.js"

/**
 * @since 0.1.0
 */
export * as PgHealth from "./PgHealth.js"

/**
 * @since 0.1.0
 */
export * as Telemetry from "./Telemetry.js"

/**
 * @since 0.1.0
 */
export * as PgPerspectiveSnapshots from "./PgPerspectiveSnapshots.js"

/**
 * @since 0.4.0
 */
export * as PgQueueVacuum from "./PgQueueVacuum.js"

/**
 * @since 0.3.0
 */
export * as PgPerspectiveVersions from "./PgPerspectiveVersions.js"

/**
 * @since 0.5.0
 */
export * as PgHistoryReplay from "./PgHistoryReplay.js"

/**
 * @since 0.3.0
 */
export * as VersionError from "./VersionError.js"

/**
 * @since 0.6.0
 */
export * as PgTenants from "./PgTenants.js"

/**
 * @since 0.6.0
 */
export * as TenantError from "./TenantError.js"

/**
 * @since 0.8.0
 */
export * as TenantStart from "./TenantStart.js"
