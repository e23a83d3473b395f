/**
 * drizzle-kit configuration. Run from the repository root: `pnpm migrations:generate`
 * (= `drizzle-kit generate --config packages/postgres/drizzle.config.ts && node scripts/embed-migrations.mjs`).
 * Hand-written SQL functions: `pnpm exec drizzle-kit generate --config packages/postgres/drizzle.config.ts --custom --name <name>`.
 *
 * Tables are generated into the placeholder schema `__whizbang_schema__` (see src/schema/serviceSchema.ts); the
 * migrator rewrites it to the service's schema at apply time. Custom migrations must qualify every object with
 * `"__whizbang_schema__".` too.
 */
import { defineConfig } from "drizzle-kit"

export default defineConfig({
  dialect: "postgresql",
  schema: "./packages/postgres/src/schema/*.ts",
  out: "./migrations",
  breakpoints: true
})
