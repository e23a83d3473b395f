import { describe, expect, it } from "@effect/vitest"
import { PgMigrator } from "@whizbang/postgres"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
// @ts-expect-error: a plain .mjs script without type declarations
import { OUTPUT, renderMigrationsModule } from "../../../scripts/embed-migrations.mjs"

const root = fileURLToPath(new URL("../../../", import.meta.url))

describe("embedded migrations", () => {
  it("the generated module is up to date with migrations/ (run `pnpm migrations:embed`)", () => {
    expect(readFileSync(`${root}${OUTPUT}`, "utf8")).toBe(renderMigrationsModule(root))
  })

  it("are numbered consecutively from 0", () => {
    expect(PgMigrator.migrations.map((m) => m.idx)).toEqual(PgMigrator.migrations.map((_, i) => i))
  })

  it("name no schema but the placeholder", () => {
    for (const migration of PgMigrator.migrations) {
      for (const statement of migration.statements) {
        const schemas = [...statement.matchAll(/"([^"]+)"\s*\.\s*(?:"|[a-z_])/g)].map((m) => m[1])
        expect(
          schemas.filter((s) => s !== "__whizbang_schema__"),
          `${migration.tag}: ${statement}`
        ).toEqual([])
        expect(statement).not.toMatch(/\bpublic\./)
      }
    }
  })
})
