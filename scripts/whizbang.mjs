#!/usr/bin/env node
// `pnpm whizbang ...`: the operations CLI of this checkout, also right after `pnpm install` on a fresh clone. It
// builds what the CLI imports first (turbo, `@whizbang/cli` and its workspace dependencies: tens of seconds the first
// time, about 0.3 s when cached), showing turbo's output only when the build fails, then runs
// `packages/cli/dist/bin.js` in this process with the arguments (its exit code is the command's).
import { spawnSync } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const build = spawnSync(
  process.execPath,
  [Path.join(root, "node_modules", "turbo", "bin", "turbo"), "run", "build", "--filter=@whizbang/cli...", "--output-logs=errors-only"],
  { cwd: root, encoding: "utf8", env: { ...process.env, TURBO_TELEMETRY_DISABLED: "1" } }
)
if (build.status !== 0) {
  process.stderr.write(`${build.stdout ?? ""}${build.stderr ?? ""}${build.error === undefined ? "" : `${build.error.message}\n`}`)
  process.stderr.write("whizbang: building the CLI failed (output above); nothing was run\n")
  process.exit(build.status ?? 1)
}
await import(pathToFileURL(Path.join(root, "packages", "cli", "dist", "bin.js")).href)
