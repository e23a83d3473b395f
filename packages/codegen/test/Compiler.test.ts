// Which TypeScript the codegen scans with: `typescript5` (an alias holding TypeScript 5 or 6) before `typescript`,
// and one line saying what to install when `typescript` is TypeScript 7, whose package exports only its version to
// JavaScript. Both are the real packages: codegen's own typescript 5.9 and the workspace root's typescript 7.
import { Result } from "effect"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { CodegenError } from "../src/CodegenError.js"
import * as Compiler from "../src/internal/compiler.js"

const typescript5 = createRequire(import.meta.url)("typescript") as Compiler.Api
const typescript7 = createRequire(new URL("../../../package.json", import.meta.url))("typescript") as { readonly version: string }

const notFound = (name: string) => Object.assign(new Error(`Cannot find module '${name}'`), { code: "MODULE_NOT_FOUND" })
const installed =
  (packages: Record<string, unknown>): Compiler.Load =>
  (name) => {
    if (name in packages) return packages[name]
    throw notFound(name)
  }

describe("the compiler API", () => {
  it("is missing from TypeScript 7's package (the workspace root's typescript)", () => {
    expect(typescript7.version).toMatch(/^7\./)
    expect(Object.keys(typescript7).sort()).toEqual(["version", "versionMajorMinor"])
  })

  it("refuses TypeScript 7 with one line naming what to install", () => {
    const found = Compiler.find([installed({ typescript: typescript7 })])
    const error = Result.isFailure(found) ? found.failure : undefined
    expect(error).toBeInstanceOf(CodegenError)
    expect(error!.reason).toBe("CompilerUnavailable")
    expect(error!.message).not.toContain("\n")
    expect(error!.message).toContain(`typescript: ${typescript7.version} has no compiler API`)
    expect(error!.message).toContain("npm i -D typescript5@npm:typescript@^5.9")
    expect(error!.message).toContain("pnpm add -D typescript5@npm:typescript@^5.9")
  })

  it("uses the typescript5 alias when present, before a TypeScript 7 typescript", () => {
    const found = Compiler.find([installed({ typescript5, typescript: typescript7 })])
    expect(Result.isSuccess(found) && found.success).toBe(typescript5)
  })

  it("uses typescript when it is TypeScript 5 and no alias is installed", () => {
    const found = Compiler.find([installed({ typescript: typescript5 })])
    expect(Result.isSuccess(found) && found.success).toBe(typescript5)
  })

  it("looks in the project first, then beside the codegen, for each name in turn", () => {
    const project = installed({ typescript: typescript7 })
    const beside = installed({ typescript: typescript5 })
    expect(Compiler.find([project, beside])).toEqual(Result.succeed(typescript5))
    const withAlias = installed({ typescript5, typescript: typescript7 })
    expect(Compiler.find([withAlias, beside])).toEqual(Result.succeed(typescript5))
  })

  it("finds the alias in a real project folder (node_modules/typescript5)", () => {
    const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "whizbang-codegen-alias-"))
    try {
      Fs.mkdirSync(Path.join(root, "node_modules", "typescript5", "lib"), { recursive: true })
      Fs.writeFileSync(
        Path.join(root, "node_modules", "typescript5", "package.json"),
        JSON.stringify({ name: "typescript", version: "5.9.3", main: "./lib/typescript.js" })
      )
      // The alias's main re-exports this package's own TypeScript 5, so the test checks where the lookup goes.
      Fs.writeFileSync(
        Path.join(root, "node_modules", "typescript5", "lib", "typescript.js"),
        `module.exports = { ...require(${JSON.stringify(createRequire(import.meta.url).resolve("typescript"))}), fromAlias: true }`
      )
      const found = Compiler.load(root)
      expect(Result.isSuccess(found) && (found.success as unknown as { fromAlias?: boolean }).fromAlias).toBe(true)
      expect(Compiler.ts).toBe(Result.isSuccess(found) ? found.success : undefined)
    } finally {
      Fs.rmSync(root, { recursive: true, force: true })
    }
  })

  it("says what to install when there is no TypeScript at all", () => {
    const found = Compiler.find([installed({})])
    const error = Result.isFailure(found) ? found.failure : undefined
    expect(error?.reason).toBe("CompilerUnavailable")
    expect(error?.message).toMatch(/^typescript: not installed: .*npm i -D typescript@\^5\.9/)
    expect(error?.message).not.toContain("\n")
  })

  it("names every package that lacks the API when the alias holds TypeScript 7 too", () => {
    const found = Compiler.find([installed({ typescript5: typescript7, typescript: typescript7 })])
    expect(Result.isFailure(found) && found.failure.message).toContain(
      `typescript5 ${typescript7.version} and typescript ${typescript7.version} have no compiler API`
    )
  })
})
