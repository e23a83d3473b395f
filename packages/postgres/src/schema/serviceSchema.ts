/**
 * The placeholder schema every `wh_` table is generated into.
 *
 * drizzle-kit writes migrations that name this schema (`"__whizbang_schema__"."wh_events"`); the migrator
 * rewrites the placeholder to the service's validated schema when it applies them, and queries build their
 * tables with `Tables.make(schema)`. A distinctive placeholder (not the default `whizbang`) means a reference
 * the rewrite missed fails loudly instead of silently landing in another service's schema.
 *
 * @since 0.1.0
 */
import { pgSchema } from "drizzle-orm/pg-core"

/**
 * @category constants
 * @since 0.1.0
 */
export { SCHEMA_PLACEHOLDER } from "../internal/schemaPlaceholder.js"

/**
 * A drizzle schema object for a service schema. No schema object is exported from the schema files (only
 * tables), so drizzle-kit emits no `CREATE SCHEMA`: the migrator creates the schema itself, idempotently.
 *
 * @category constructors
 * @since 0.1.0
 */
export const serviceSchema = (name: string) => pgSchema(name)
