// The bench's quick profile as a CI smoke test: every scenario completes and every read model equals its fold.
// It asserts no timings (they depend on the machine).
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, inject, it } from "vitest"

const bench = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..")

describe("pnpm bench --profile quick", () => {
  it("runs every scenario and finds every read model equal to its fold", async () => {
    const { code, output, reason } = await new Promise<{ code: number; output: string; reason: string }>((resolve) => {
      execFile(
        "pnpm",
        ["exec", "tsx", "src/main.ts", "--profile", "quick"],
        {
          cwd: bench,
          env: { ...process.env, DATABASE_URL: inject("whizbangTestPostgresUrl"), NO_COLOR: "1" },
          timeout: 240_000,
          maxBuffer: 16 * 1024 * 1024
        },
        (error, stdout, stderr) =>
          resolve({
            code: error ? (typeof error.code === "number" ? error.code : 1) : 0,
            output: stdout + stderr,
            // What ended the run, first: a scenario's failure or fold mismatch is written to stderr, and CI's summary
            // shows only the first lines of a failure message.
            reason: [
              error?.killed ? `killed (${error.signal}) after the 240 s timeout` : "",
              ...stderr.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("[worker Warn]"))
            ]
              .filter(Boolean)
              .join("\n")
          })
      )
    })
    // The head of the output names the scenario; the tail, what ended it.
    expect(code, `${reason.slice(0, 4000)}\n---\n${output.slice(0, 2000)}\n...\n${output.slice(-6000)}`).toBe(0)
    expect(output).toMatch(/Throughput/)
    expect(output).toMatch(/Latency/)
    expect(output).toMatch(/Read-your-writes/)
    expect(output).toMatch(/Scale/)
    expect(output).toMatch(/Version rebuild/)
    expect(output).not.toMatch(/\bNO\b/)
  }, 300_000)
})
