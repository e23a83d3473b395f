import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

// Tests import the workspace packages from source, so a change is tested without a rebuild.
// `pnpm test` still runs `tsc -b` first, so the published build is type-checked on every run.
const packages = ["core", "postgres", "testing", "sync", "stream-locker", "codegen", "cli", "whizbang"] as const
const source = (name: string) => fileURLToPath(new URL(`./packages/${name}/src/index.ts`, import.meta.url))

const alias = {
  ...Object.fromEntries(packages.map((name) => [`@whizbang/${name}`, source(name)])),
  // The umbrella package is published as plain `whizbang`.
  whizbang: source("whizbang")
}

export default defineConfig({
  test: {
    // Declared once here and not inherited by the projects: one PostgreSQL server for the whole run.
    globalSetup: [fileURLToPath(new URL("./packages/testing/src/vitest/globalSetup.ts", import.meta.url))],
    projects: packages.flatMap((name) => [
      {
        resolve: { alias },
        test: {
          name: `@whizbang/${name}:unit`,
          root: `packages/${name}`,
          include: ["test/**/*.test.ts"],
          exclude: ["test/**/*.int.test.ts"]
        }
      },
      {
        resolve: { alias },
        test: {
          name: `@whizbang/${name}:int`,
          root: `packages/${name}`,
          include: ["test/**/*.int.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000
        }
      }
    ]).concat([
      {
        resolve: { alias },
        test: { name: "examples", include: ["examples/*/test/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 60_000 }
      },
      {
        resolve: { alias },
        test: {
          // The front-door acceptance suite: composed only through `whizbang`, with worker processes.
          name: "acceptance",
          root: "packages/acceptance",
          include: ["test/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000
        }
      },
      {
        test: { name: "bench", include: ["bench/test/**/*.test.ts"], testTimeout: 300_000 }
      }
    ])
  }
})
