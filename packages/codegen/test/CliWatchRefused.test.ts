// `--watch` when the system refuses a watch (too many inotify instances or watches): a clear message and exit code 2,
// not a crash. node:fs's watch is replaced in this file only.
import { describe, expect, it, vi } from "vitest"
import { main } from "../src/Cli.js"
import { fixture } from "./project.js"

vi.mock("node:fs", async (original) => {
  const fs = await original<typeof import("node:fs")>()
  const watch = () => {
    throw Object.assign(new Error("EMFILE: too many open files, watch"), { code: "EMFILE" })
  }
  return { ...fs, default: { ...fs, watch }, watch }
})

describe("whizbang-codegen --watch", () => {
  it("exits 2 naming the directory when the system refuses to watch it", () => {
    const lines: Array<string> = []
    const io = { cwd: fixture("valid"), out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) }
    expect(main(["check", "--watch"], io)).toBe(2)
    expect(lines.at(-1)).toBe("whizbang-codegen: cannot watch src: EMFILE: too many open files, watch")
  })
})
