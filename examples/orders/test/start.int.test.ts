// `pnpm start` as a person uses it: a busy port, and Ctrl-C in the terminal (SIGINT to the whole process group).
import { spawn } from "node:child_process"
import { readdirSync, statSync } from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const dir = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const tsx = Path.join(dir, "node_modules", ".bin", "tsx")

interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs main.ts in its own process group; `onStdout` may act on the output (e.g. press Ctrl-C). */
const start = (args: ReadonlyArray<string>, onStdout: (stdout: string, group: number) => void = () => undefined) =>
  new Promise<Finished>((resolve, reject) => {
    const child = spawn(tsx, ["src/main.ts", ...args], {
      cwd: dir,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, DATABASE_URL: "", PORT: "" }
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString()
      onStdout(stdout, child.pid!)
    })
    child.stderr.on("data", (chunk: Buffer) => void (stderr += chunk.toString()))
    child.on("error", reject)
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })

/** The operations CLI of this checkout (its source, as `pnpm whizbang` runs its build). */
const runCli = (args: ReadonlyArray<string>) =>
  new Promise<Finished>((resolve, reject) => {
    const child = spawn(tsx, [Path.join(dir, "..", "..", "packages", "cli", "src", "bin.ts"), ...args], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, DATABASE_URL: "", NO_COLOR: "1" }
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => void (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => void (stderr += chunk.toString()))
    child.on("error", reject)
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })

/** Root in a folder other users cannot enter: the embedded PostgreSQL (run as `postgres`) cannot reach its binaries. */
const rootInClosedFolder = () => {
  if (process.getuid?.() !== 0) return false
  for (let d = dir; Path.dirname(d) !== d; d = Path.dirname(d)) if ((statSync(d).mode & 0o001) === 0) return true
  return false
}

const embeddedDirs = () => new Set(readdirSync(Os.tmpdir()).filter((name) => name.startsWith("whizbang-embedded-pg-")))

describe("pnpm start", () => {
  it("on a busy port says so in one line, with how to pick another, and starts nothing", async () => {
    const blocker = Net.createServer()
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve))
    const port = (blocker.address() as Net.AddressInfo).port
    const before = embeddedDirs()
    const result = await start(["--port", String(port)]).finally(() => blocker.close())
    expect(result.code).toBe(1)
    expect(result.stderr.trim().split("\n")).toEqual([expect.stringContaining(`Port ${port} is in use`)])
    expect(result.stderr).toContain("--port")
    expect(result.stderr).toContain("PORT=")
    expect(result.stdout).not.toContain("PostgreSQL")
    expect([...embeddedDirs()].filter((name) => !before.has(name))).toEqual([])
  })

  it("prints the command the CLI needs to find its data, and stops the API, the worker process and the embedded PostgreSQL on Ctrl-C, quietly, leaving nothing behind", async () => {
    const before = embeddedDirs()
    let pressed = false
    let status: Promise<Finished> | undefined
    let deadline: NodeJS.Timeout | undefined
    const ctrlC = (group: number) => {
      pressed = true
      process.kill(-group, "SIGINT") // what the terminal does on Ctrl-C
    }
    const result = await start(["--port", "0", "--instances", "1"], (stdout, group) => {
      const printed = /^whizbang CLI: pnpm whizbang (status --database-url \S+ --schema orders)$/m.exec(stdout)
      if (!pressed && status === undefined && printed !== null) {
        clearTimeout(deadline)
        // The printed command, as the operator runs it; then Ctrl-C.
        status = runCli(printed[1]!.split(" ")).finally(() => ctrlC(group))
      } else if (!pressed && status === undefined && deadline === undefined && stdout.includes("Orders API on")) {
        // Never left running: without the CLI line (printed with the others) it is stopped all the same.
        deadline = setTimeout(() => ctrlC(group), 10_000)
      }
    }).finally(() => clearTimeout(deadline))
    if (rootInClosedFolder()) {
      // Documented alternative: it cannot start here, and says so in one line that tells what to do.
      expect(pressed).toBe(false)
      expect(result.code).toBe(1)
      expect(result.stderr.trim().split("\n")).toEqual([expect.stringContaining("Could not start the embedded PostgreSQL")])
      expect([...embeddedDirs()].filter((name) => !before.has(name))).toEqual([])
      return
    }
    expect(pressed).toBe(true)
    expect(status, "the CLI line was printed").toBeDefined()
    const cli = await status!
    expect(cli.stderr).toBe("")
    expect(cli.code).toBe(0)
    expect(cli.stdout).toMatch(/^whizbang status — schema orders — /)
    expect(cli.stdout).toMatch(/order_summary/)
    expect(result.code).toBe(0)
    expect(result.stderr).toBe("")
    expect(result.stdout).toContain("Stopped: API, worker(s), PostgreSQL.")
    expect([...embeddedDirs()].filter((name) => !before.has(name))).toEqual([])
  }, 120_000)
})
