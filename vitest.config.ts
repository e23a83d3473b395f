import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

// One config for the whole workspace; turbo runs one project per task (`scripts/vitest-tier.mjs`), and a plain
// `pnpm exec vitest run <file>` from the root still works. Tests import the workspace packages from source, so a
// change is tested without a rebuild.
const packages = ["core", "postgres", "testing", "sync", "stream-locker", "codegen", "cli", "dashboard", "whizbang"] as const
const source = (name: string) => fileURLToPath(new URL(`./packages/${name}/src/index.ts`, import.meta.url))

const alias = {
  // The internal entries (`@whizbang/core/internal`, `@whizbang/postgres/internal`) come first: an alias also
  // matches `<key>/...`, so `@whizbang/core` would turn `@whizbang/core/internal` into `.../src/index.ts/internal`.
  ...Object.fromEntries(
    (["core", "postgres"] as const).map((name) => [
      `@whizbang/${name}/internal`,
      fileURLToPath(new URL(`./packages/${name}/src/internal.ts`, import.meta.url))
    ])
  ),
  ...Object.fromEntries(packages.map((name) => [`@whizbang/${name}`, source(name)])),
  // The umbrella package is published as plain `whizbang`.
  whizbang: source("whizbang")
}

// Only the integration tiers need PostgreSQL: one server per vitest run (a URL when WHIZBANG_TEST_DATABASE_URL is
// set, else testcontainers or an embedded server), shared by every file of the tier through its own database.
const globalSetup = [fileURLToPath(new URL("./packages/testing/src/vitest/globalSetup.ts", import.meta.url))]
const slow = { testTimeout: 60_000, hookTimeout: 60_000 }

const tiers = (name: string, dir: string, options: { readonly alias?: boolean; readonly timeout?: number } = {}) => {
  const root = fileURLToPath(new URL(`./${dir}`, import.meta.url))
  const resolve = options.alias === false ? {} : { resolve: { alias } }
  const timeouts = options.timeout === undefined ? slow : { testTimeout: options.timeout, hookTimeout: options.timeout }
  return [
    {
      ...resolve,
      test: {
        name: `${name}:unit`,
        root,
        include: ["test/**/*.test.ts"],
        exclude: ["test/**/*.int.test.ts", "**/node_modules/**"],
        // CPU-bound property tests share two cores with the other tiers' builds and tests.
        testTimeout: 15_000
      }
    },
    { ...resolve, test: { name: `${name}:int`, root, include: ["test/**/*.int.test.ts"], globalSetup, ...timeouts } }
  ]
}

export default defineConfig({
  test: {
    projects: [
      ...packages.flatMap((name) => tiers(name === "whizbang" ? "whizbang" : `@whizbang/${name}`, `packages/${name}`)),
      ...tiers("@whizbang/example-hello", "examples/hello"),
      ...tiers("@whizbang/example-orders", "examples/orders"),
      ...tiers("@whizbang/example-multi-instance", "examples/multi-instance"),
      // The front-door acceptance suite: composed only through `whizbang`, with worker processes.
      ...tiers("@whizbang/acceptance", "packages/acceptance", { timeout: 120_000 }),
      ...tiers("@whizbang/bench", "bench", { alias: false, timeout: 300_000 }),
      ...tiers("@whizbang/release-checks", "scripts", { alias: false, timeout: 600_000 })
    ]
  }
})
