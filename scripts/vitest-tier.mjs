#!/usr/bin/env node
// `test:unit` / `test:int` of one workspace package, as a turbo task: runs that package's vitest project of the root
// config (one config, one set of aliases) and writes the JSON report turbo caches and `scripts/run-tests.mjs` sums.
import { spawnSync } from "node:child_process"
import { mkdirSync, readFileSync, rmSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const tier = process.argv[2]
if (tier !== "unit" && tier !== "int") {
  console.error("usage: vitest-tier.mjs unit|int [vitest args]")
  process.exit(2)
}
const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const { name } = JSON.parse(readFileSync("package.json", "utf8"))
const report = Path.resolve("test-results", `${tier}.json`)
mkdirSync(Path.dirname(report), { recursive: true })
rmSync(report, { force: true })

const result = spawnSync(
  Path.join(root, "node_modules", ".bin", "vitest"),
  [
    "run",
    "--root",
    root,
    "--project",
    `${name}:${tier}`,
    "--passWithNoTests",
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${report}`,
    ...process.argv.slice(3)
  ],
  {
    cwd: root,
    stdio: "inherit",
    env: process.env.CI && process.env.NO_COLOR === undefined ? { ...process.env, NO_COLOR: "1" } : process.env
  }
)
process.exit(result.status ?? 1)
