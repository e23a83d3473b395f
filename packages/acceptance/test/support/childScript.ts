// A test's child process: a support script run under tsx with the workspace packages from source (as the tests import
// them through vitest aliases), talking in lines on stdin and stdout. It stops with the test's scope: stdin is closed
// (the script stops gracefully) and it is killed if it has not exited 10 s later.
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect, type Scope } from "effect"

const root = fileURLToPath(new URL("../../../..", import.meta.url))

export interface ChildScript {
  /** Writes one line to the script's stdin. */
  readonly send: (line: string) => void
  /** The last 4,000 characters the script wrote to stderr. */
  readonly stderr: () => string
  /** Closes the script's stdin: it stops gracefully. */
  readonly end: () => void
  /** Kills the script at once (SIGKILL): no finalizer runs, its connections drop. */
  readonly kill: () => void
}

/** Starts `entry` with `env` over this process's environment; `onLine` gets each stdout line, `onExit` its exit code. */
export const start = (
  entry: string,
  env: Record<string, string>,
  onLine: (line: string) => void,
  onExit: (code: number | null) => void
): Effect.Effect<ChildScript, never, Scope.Scope> =>
  Effect.gen(function* () {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, ["--import", "tsx", entry], {
          cwd: root,
          env: { ...process.env, TSX_TSCONFIG_PATH: `${root}/tsconfig.tests.json`, ...env },
          stdio: ["pipe", "pipe", "pipe"]
        })
      ),
      (child) =>
        Effect.callback<void>((resume) => {
          if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
          const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
          child.once("exit", () => {
            clearTimeout(timer)
            resume(Effect.void)
          })
          child.stdin.end()
        })
    )
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000)
    })
    let buffered = ""
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString()
      const lines = buffered.split("\n")
      buffered = lines.pop()!
      for (const line of lines) onLine(line)
    })
    child.on("exit", onExit)
    return {
      send: (line) => void child.stdin.write(`${line}\n`),
      stderr: () => stderr,
      end: () => void child.stdin.end(),
      kill: () => void child.kill("SIGKILL")
    }
  })
