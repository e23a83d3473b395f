// Runs the root README's quick start exactly as written, against a fresh test database.
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { expect, layer } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Effect } from "effect"

const here = Path.dirname(fileURLToPath(import.meta.url))
const readme = readFileSync(Path.join(here, "../../../README.md"), "utf8")
const section = readme.slice(readme.indexOf("## Quick start"))
const code = section.slice(section.indexOf("```ts") + "```ts".length, section.indexOf("```", section.indexOf("```ts") + 5))

layer(TestDatabase.layer)((it) => {
  it.effect(
    "the README quick start runs and prints the materialized balance",
    () =>
      Effect.gen(function* () {
        expect(code.split("\n").filter((l) => l.trim() !== "").length).toBeLessThanOrEqual(30)
        const { url } = yield* TestDatabase.TestDatabase
        // Written inside this package so `whizbang` resolves from its node_modules, as in a user's project.
        const dir = mkdtempSync(Path.join(here, "..", ".quickstart-"))
        const file = Path.join(dir, "quickstart.ts")
        writeFileSync(file, code)
        const output = yield* Effect.callback<string, Error>((resume) => {
          execFile(
            "pnpm",
            ["exec", "tsx", file],
            { cwd: Path.join(here, ".."), env: { ...process.env, DATABASE_URL: url }, timeout: 60_000 },
            (error, stdout, stderr) => resume(error ? Effect.fail(new Error(`${error.message}\n${stderr}`)) : Effect.succeed(stdout))
          )
        }).pipe(Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))))
        expect(output).toContain("Synced balance: { total: 142 }")
      }),
    { timeout: 90_000 }
  )
})
