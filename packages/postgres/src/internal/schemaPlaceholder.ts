// The placeholder schema every `wh_` table is generated into (see ../schema/serviceSchema.ts), which the migrator
// rewrites to the service's schema. It lives apart from the drizzle schema files so that the migrator, part of the
// main entry, imports no drizzle-orm.
export const SCHEMA_PLACEHOLDER = "__whizbang_schema__"
