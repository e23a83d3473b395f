import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import * as Cli from "../src/Cli.js"

describe("Cli.version", () => {
  it("is the package's own version, so a release bump needs no code change", () => {
    const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
    expect(Cli.version).toBe(manifest.version)
  })
})
