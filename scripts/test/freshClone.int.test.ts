// A fresh clone, as a new contributor gets it: `pnpm install`, then `pnpm whizbang ...` (a root command the README
// names) with nothing built yet. The clone is of this repository's HEAD (uncommitted changes are not in it), installed
// offline from the store this checkout was installed from, so the test needs no network.
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { workspaceRoot } from "./support/readmeBlocks.js"

const base = mkdtempSync(Path.join(Os.tmpdir(), "whizbang-clone-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))

const run = (command: string, args: ReadonlyArray<string>, cwd: string) => {
  const started = Date.now()
  const result = spawnSync(command, args, { cwd, encoding: "utf8", timeout: 300_000, env: { ...process.env, NO_COLOR: "1" } })
  return {
    status: result.status,
    stdout: result.stdout ?? "",
    output: `${result.stdout ?? ""}${result.stderr ?? ""}${result.error ? `\n${result.error.message}` : ""}`,
    millis: Date.now() - started
  }
}

describe("a fresh clone", () => {
  it("runs `pnpm whizbang` right after `pnpm install`: it builds what the CLI needs first, quietly", () => {
    const clone = Path.join(base, "whizbang")
    const cloned = run("git", ["clone", "--quiet", workspaceRoot, clone], base)
    expect(cloned.status, cloned.output).toBe(0)
    const installed = run("pnpm", ["install", "--frozen-lockfile", "--offline"], clone)
    expect(installed.status, installed.output).toBe(0)
    expect(existsSync(Path.join(clone, "packages", "postgres", "dist"))).toBe(false)

    const help = run("pnpm", ["whizbang", "--help"], clone)
    expect(help.status, help.output).toBe(0)
    expect(help.stdout).toContain("whizbang <subcommand> [flags]")
    expect(help.stdout).toMatch(/^\s+rebuild\s/m)
    expect(help.stdout).toMatch(/^\s+work\s/m)
    // turbo's output shows only when the build fails.
    expect(help.output).not.toMatch(/Tasks:|turbo \d/)

    // Built now: the next command is quick (turbo replays its cache).
    const version = run("pnpm", ["whizbang", "--version"], clone)
    expect(version.status, version.output).toBe(0)
    expect(version.stdout).toMatch(/^whizbang v\d+\.\d+\.\d+$/m)
    console.log(`pnpm whizbang on a fresh clone: ${help.millis} ms the first time (build included), ${version.millis} ms after`)
  })
})
