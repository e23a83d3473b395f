// Runs the real executable (src/bin.ts through tsx's loader) in a child process.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { main } from "../src/Cli.js"
import { copyFixture, fixture, project, removeProjects } from "./project.js"

afterAll(removeProjects)

const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
const args = (cliArgs: ReadonlyArray<string>) => ["--import", tsx, bin, ...cliArgs]

const cli = (cwd: string, ...cliArgs: Array<string>) => {
  const result = spawnSync(process.execPath, args(cliArgs), { cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

/** Resolves with the first stdout line containing `text`. */
const line = (child: ChildProcess, text: string) =>
  new Promise<string>((resolve, reject) => {
    let buffer = ""
    let errors = ""
    child.stderr!.on("data", (chunk: Buffer) => {
      errors += chunk.toString()
    })
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString()
      const found = buffer.split("\n").find((l) => l.includes(text))
      if (found !== undefined) {
        child.stdout!.off("data", onData)
        resolve(found)
      }
    }
    child.stdout!.on("data", onData)
    child.once("exit", (code) => reject(new Error(`exited with ${code} before printing "${text}": ${buffer}\nstderr: ${errors}`)))
  })

describe("whizbang-codegen", { timeout: 120_000 }, () => {
  it("check fails on the broken fixture with file:line:col for each error", () => {
    const { code, stderr } = cli(fixture("broken"), "check")
    expect(code).toBe(1)
    expect(stderr).toContain(
      `src/perspectives.ts:16:28 - error duplicate-perspective-name: perspective name "balance" is already defined at ./perspectives.ts:8:24`
    )
    expect(stderr).toContain(`src/events.ts:14:47 - error missing-stream-id:`)
    expect(stderr).toContain(`src/receptors.ts:10:47 - error awaited-event-not-handled:`)
    expect(stderr).toContain(`src/perspectives.ts:33:22 - error dynamic-definition:`)
    expect(stderr).toContain("whizbang-codegen: 15 errors, src/whizbang.generated.ts not generated")
  })

  it("check passes on the valid fixture's committed output", () => {
    const { code, stdout, stderr } = cli(fixture("valid"), "check")
    expect([code, stderr]).toEqual([0, ""])
    expect(stdout).toContain("src/whizbang.generated.ts is up to date")
  })

  it("generate writes, leaves an unchanged file untouched, and check then fails once a source changes", () => {
    const root = copyFixture("valid")
    const out = `${root}/src/whizbang.generated.ts`
    Fs.rmSync(out)
    expect(cli(root, "check")).toMatchObject({ code: 1, stderr: expect.stringContaining("is out of date") })
    expect(cli(root, "generate")).toMatchObject({ code: 0, stdout: expect.stringContaining("wrote src/whizbang.generated.ts") })
    const past = new Date("2020-01-01T00:00:00Z")
    Fs.utimesSync(out, past, past)
    expect(cli(root, "generate")).toMatchObject({ code: 0, stdout: expect.stringContaining("src/whizbang.generated.ts unchanged") })
    expect(Fs.statSync(out).mtimeMs).toBe(past.getTime())
    Fs.appendFileSync(
      `${root}/src/events.ts`,
      `\nexport const Refunded = EventDefinition.make("Refunded", { payload: Schema.String, streamId: (s) => s })\n`
    )
    expect(cli(root, "check")).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("src/whizbang.generated.ts is out of date: run whizbang-codegen generate")
    })
  })

  it("check passes on examples/hello with an out-of-tree output and flags instead of a config file", () => {
    const hello = Path.resolve(fixture("valid"), "../../../../../examples/hello")
    const out = Path.join(project({}), "hello.generated.ts")
    expect(cli(hello, "generate", "--include", "src/**/*.ts", "--out", out, "--no-drizzle").code).toBe(0)
    const { code, stdout, stderr } = cli(hello, "check", "--include", "src/**/*.ts", "--out", out, "--no-drizzle")
    expect([code, stderr]).toEqual([0, ""])
    expect(stdout).toContain(`${out} is up to date`)
    expect(Fs.readFileSync(out, "utf8")).toContain(`"MoneyDeposited": MoneyDeposited.streamId`)
  })

  it("exits 2 on bad usage or configuration", () => {
    expect(cli(fixture("valid"), "publish")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`expected "generate" or "check", got publish`)
    })
    // The rest in-process: same code path, without paying for a process each.
    const run = (...argv: Array<string>) => {
      const lines: Array<string> = []
      const io = { cwd: fixture("valid"), out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) }
      return { code: main(argv, io), output: lines.join("\n") }
    }
    expect(run("check", "--frobnicate")).toMatchObject({ code: 2, output: expect.stringContaining("Unknown option '--frobnicate'") })
    expect(run("check", "--config", "nope.json")).toMatchObject({
      code: 2,
      output: expect.stringContaining("nope.json: no such config file")
    })
    expect(run("check", "--import-extension", ".mjs")).toMatchObject({
      code: 2,
      output: expect.stringContaining("--import-extension must be .js, .ts or none")
    })
    expect(run("generate", "check").code).toBe(2)
    expect(run("--help")).toMatchObject({ code: 0, output: expect.stringContaining("Usage: whizbang-codegen <generate|check>") })
    expect(run("check")).toEqual({ code: 0, output: "whizbang-codegen: src/whizbang.generated.ts is up to date" })
  })

  it("--watch regenerates when a scanned file changes", async () => {
    const root = copyFixture("valid")
    const child = spawn(process.execPath, args(["generate", "--watch"]), { cwd: root, stdio: ["ignore", "pipe", "pipe"] })
    try {
      await line(child, "watching src")
      const written = line(child, "wrote src/whizbang.generated.ts")
      Fs.appendFileSync(
        `${root}/src/events.ts`,
        `\nexport const Refunded = EventDefinition.make("Refunded", { payload: Schema.String, streamId: (s) => s })\n`
      )
      await written
      expect(Fs.readFileSync(`${root}/src/whizbang.generated.ts`, "utf8")).toContain(`"Refunded": Refunded.streamId`)
    } finally {
      child.kill()
    }
  })
})
