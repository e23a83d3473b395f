// Every ```ts block of README.md, packages/*/README.md and examples/*/README.md type-checks against the built workspace packages.
import { spawnSync } from "node:child_process"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { blockErrors, extractBlocks, optOutMarker, pending, readmeFiles, workspaceRoot, writeBlocks } from "./support/readmeBlocks.js"

describe("extractBlocks", () => {
  it("finds ts and typescript fences with their README line, and honours the fragment marker", () => {
    const markdown = ["# T", "```ts", "const a = 1", "```", "", optOutMarker, "", "```typescript", "a.b", "```", "```sh", "ls", "```"].join(
      "\n"
    )
    expect(extractBlocks("R.md", markdown)).toEqual([
      { readme: "R.md", line: 3, code: "const a = 1", fragment: false },
      { readme: "R.md", line: 9, code: "a.b", fragment: true }
    ])
  })

  it("maps compiler errors back to the README line", () => {
    const written = [{ readme: "R.md", line: 10, code: "", fragment: false, file: "R_md_1.ts" }]
    expect(blockErrors("/tmp/x/R_md_1.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.", written)).toEqual([
      { readme: "R.md", line: 12, message: "error TS2322: Type 'string' is not assignable to type 'number'." }
    ])
  })
})

describe("README code blocks", () => {
  const dir = Path.join(workspaceRoot, "scripts", ".readme-blocks")
  const written = writeBlocks(dir, {
    target: "ES2022",
    lib: ["ES2023"],
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    skipLibCheck: true
  })
  const tsc = spawnSync(
    Path.join(workspaceRoot, "node_modules", ".bin", "tsc"),
    ["-p", Path.join(dir, "tsconfig.json"), "--pretty", "false"],
    {
      encoding: "utf8"
    }
  )
  const output = `${tsc.stdout}${tsc.stderr}`
  const errors = blockErrors(output, written)

  it("has blocks to check", () => {
    expect(written.length).toBeGreaterThan(0)
  })

  for (const readme of readmeFiles()) {
    it(`${readme} type-checks`, (context) => {
      const mine = errors.filter((error) => error.readme === readme).map((error) => `${error.readme}:${error.line}: ${error.message}`)
      if (pending.has(readme)) {
        expect(mine, `${readme} type-checks now: remove it from \`pending\` in this file`).not.toEqual([])
        console.warn(`${readme}: ${mine.length} type error(s) in its code blocks (pending):\n  ${mine.join("\n  ")}`)
        context.skip()
      }
      expect(mine).toEqual([])
    })
  }

  it("tsc reports nothing outside the blocks", () => {
    const outside = output.split("\n").filter((line) => /error TS\d+/.test(line) && !written.some((block) => line.includes(block.file)))
    expect(outside).toEqual([])
  })
})
