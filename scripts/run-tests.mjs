#!/usr/bin/env node
// Runs every vitest project once (unit and integration, one PostgreSQL for the run) and ends with the line
// `N passed, N failed, N skipped` that CI reads; vitest's own summary is not in that form.
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs"

const report = "test-results/vitest.json"
mkdirSync("test-results", { recursive: true })
rmSync(report, { force: true })

const result = spawnSync(
  "pnpm",
  ["exec", "vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...process.argv.slice(2)],
  { stdio: "inherit", env: { ...process.env, NO_COLOR: process.env.NO_COLOR ?? (process.env.CI ? "1" : undefined) } }
)

if (!existsSync(report)) {
  console.error(`vitest wrote no report (exit ${result.status ?? result.signal}); see its output above`)
  console.log("0 passed, 1 failed")
  process.exit(result.status || 1)
}
const totals = JSON.parse(readFileSync(report, "utf8"))
const skipped = (totals.numPendingTests ?? 0) + (totals.numTodoTests ?? 0)
// A file that failed to load counts as a failure even though it holds no failed test.
const brokenFiles = (totals.testResults ?? []).filter((file) => file.status === "failed" && file.assertionResults.length === 0).length
console.log(`${totals.numPassedTests} passed, ${totals.numFailedTests + brokenFiles} failed, ${skipped} skipped`)
process.exit(result.status ?? 1)
