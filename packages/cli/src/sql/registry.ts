/**
 * The perspective versions registry (`wh_perspective_versions`, migration 0005) as the CLI reads it: which
 * perspectives a release of the service registered, their versions, states and the event types each handles.
 */

/** Whether the schema has the registry (a schema migrated before 0005 has not). */
export const hasRegistry = `SELECT to_regclass('wh_perspective_versions') IS NOT NULL AS present`

/** Every registered version. */
export const registered = `
SELECT perspective_name, base_name, version, state, event_types FROM wh_perspective_versions ORDER BY base_name, version`
