#!/usr/bin/env node
// `pnpm test`: every check as turbo tasks, then the one line `N passed, N failed, N skipped` that CI reads.
//
//   1. build, the test/example/bench type-check, lint and every unit tier: in parallel, replayed from turbo's cache
//      when their inputs did not change;
//   2. every integration tier (never cached: they run against a real PostgreSQL), one package at a time, because
//      each already runs its files in parallel and the latency tests measure time.
//
// Each tier's vitest writes `test-results/<tier>.json` in its package (a turbo output, so a cached tier brings its
// report back); the line sums them. Options: `--tier unit|int` runs one tier; anything else goes to turbo
// (e.g. `--filter=...[HEAD^]`).
import { spawnSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const args = process.argv.slice(2)
const tierIndex = args.indexOf("--tier")
const tier = tierIndex === -1 ? "all" : args[tierIndex + 1]
const turboArgs = tierIndex === -1 ? args : args.filter((_, i) => i !== tierIndex && i !== tierIndex + 1)
if (!["all", "unit", "int"].includes(tier)) {
  console.error("usage: run-tests.mjs [--tier unit|int] [turbo options]")
  process.exit(2)
}

const workspaceDirs = [
  ...["packages", "examples"].flatMap((group) =>
    readdirSync(Path.join(root, group), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => Path.join(root, group, d.name))
  ),
  Path.join(root, "bench"),
  Path.join(root, "scripts")
]
const reports = workspaceDirs.flatMap((dir) => ["unit", "int"].map((t) => Path.join(dir, "test-results", `${t}.json`)))
for (const report of reports) rmSync(report, { force: true })

const env = { ...process.env, TURBO_TELEMETRY_DISABLED: "1", ...(process.env.CI ? { NO_COLOR: process.env.NO_COLOR ?? "1" } : {}) }
const turbo = (tasks, extra = []) => {
  const result = spawnSync(Path.join(root, "node_modules", ".bin", "turbo"), ["run", ...tasks, "--continue", ...extra, ...turboArgs], {
    cwd: root,
    stdio: "inherit",
    env
  })
  return result.status === 0
}

// `pnpm lint` (biome: format check and lint rules) is part of every run: an unformatted file fails `pnpm test`
// (`pnpm format` fixes it).
const lintInTests = true
// As many tasks at once as there are cores: each vitest already runs its files in parallel, and more tasks than cores
// only make CPU-bound tests (the property tests) slower than their timeouts.
const parallel = Math.max(2, Os.availableParallelism())
const steps = []
if (tier !== "int") {
  steps.push([
    "build, type-check, lint, unit tiers",
    turbo(["build", "typecheck:tests", ...(lintInTests ? ["lint:biome"] : []), "test:unit"], [`--concurrency=${parallel}`])
  ])
}
if (tier !== "unit") steps.push(["integration tiers", turbo(["test:int"], ["--concurrency=1"])])

let passed = 0
let failed = 0
let skipped = 0
// The failures again, last, so that the tail of a long log names them.
const failures = []
for (const report of reports.filter((file) => existsSync(file))) {
  const totals = JSON.parse(readFileSync(report, "utf8"))
  for (const file of totals.testResults ?? []) {
    const where = Path.relative(root, file.name ?? "")
    if (file.status === "failed" && (file.assertionResults ?? []).length === 0) failures.push(`${where}: ${firstLines(file.message)}`)
    for (const test of file.assertionResults ?? []) {
      if (test.status === "failed")
        failures.push(`${where} > ${test.fullName ?? test.title}: ${firstLines((test.failureMessages ?? []).join("\n"))}`)
    }
  }
  passed += totals.numPassedTests ?? 0
  // A file that failed to load counts as a failure even though it holds no failed test.
  const brokenFiles = (totals.testResults ?? []).filter((file) => file.status === "failed" && file.assertionResults.length === 0).length
  failed += (totals.numFailedTests ?? 0) + brokenFiles
  skipped += (totals.numPendingTests ?? 0) + (totals.numTodoTests ?? 0)
}
// A step that failed without a failed test (a build or type error, a tier that wrote no report) is one failure.
const failedSteps = steps.filter(([, ok]) => !ok).map(([name]) => name)
if (failedSteps.length > 0 && failed === 0) {
  console.error(`failed without a failing test: ${failedSteps.join("; ")} (see the output above)`)
  failed = failedSteps.length
}
if (failures.length > 0) console.error(`failed tests:\n${failures.map((failure) => `- ${failure}`).join("\n")}`)
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`)
process.exit(failed > 0 || failedSteps.length > 0 ? 1 : 0)

/** The first lines of a failure message: enough to name the assertion, short enough for a log's tail. */
function firstLines(message) {
  return String(message ?? "")
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.trim().startsWith("at "))
    .slice(0, 6)
    .join("\n    ")
}
