import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { closedToOthers, unreachableBinariesMessage } from "../src/internal/embeddedServer.js"

describe("closedToOthers", () => {
  const dirs: Array<string> = []
  afterEach(() => {
    for (const dir of dirs.splice(0)) {
      chmodSync(dir, 0o755)
      rmSync(dir, { recursive: true, force: true })
    }
  })
  const tree = () => {
    const root = mkdtempSync(Path.join(Os.tmpdir(), "whizbang-reach-"))
    dirs.push(root)
    chmodSync(root, 0o755)
    mkdirSync(Path.join(root, "app", "bin"), { recursive: true })
    const binary = Path.join(root, "app", "bin", "initdb")
    writeFileSync(binary, "")
    chmodSync(binary, 0o755)
    return { root, binary }
  }

  it("finds nothing when every folder and the binary are open to others", () => {
    const { binary } = tree()
    expect(closedToOthers(binary)).toBeUndefined()
  })

  it("names the first folder others cannot enter, like a project under /root", () => {
    const { root, binary } = tree()
    chmodSync(Path.join(root, "app"), 0o700)
    expect(closedToOthers(binary)).toBe(Path.join(root, "app"))
    chmodSync(Path.join(root, "app"), 0o755)
  })

  it("names the binary itself when others may not execute it", () => {
    const { binary } = tree()
    chmodSync(binary, 0o750)
    expect(closedToOthers(binary)).toBe(binary)
  })

  it("says in one line what is wrong and what to do", () => {
    const message = unreachableBinariesMessage("/root/app/node_modules/x/initdb", "/root")
    expect(message.split("\n")).toHaveLength(1)
    expect(message).toContain("chmod o+x /root")
    expect(message).toContain("DATABASE_URL")
  })
})
