// The TypeScript compiler API, found at run time instead of by a static `import ts from "typescript"`: TypeScript 7
// (npm's `typescript` since 7.0) is a native compiler whose package exports only its version to JavaScript, and a
// static import of it crashed the codegen at load (`Cannot read properties of undefined (reading 'NodeNext')`).
// `typescript5` (an npm alias holding TypeScript 5 or 6 beside a TypeScript 7 `typescript`) is tried first, then
// `typescript`, each from the scanned project first (where the app installed it), then from this package; a package
// without the API is a `CodegenError` that says in one line what to install. (`typescript5` is not declared as a
// peer: pnpm looks declared peers up on the registry, where no such package exists.)
//
// The modules that scan read the API through the live binding `ts` (assigned by `load`, which every entry runs
// first) and name its types through `import type TS from "typescript"`, which costs nothing at run time.
import { createRequire } from "node:module"
import * as Path from "node:path"
import { Result } from "effect"
import type TS from "typescript"
import { CodegenError } from "../CodegenError.js"

export type Api = typeof TS

/** The package names tried, in order. */
export const packageNames = ["typescript5", "typescript"] as const

/** What to run to get a compiler API beside a TypeScript 7 `typescript`. */
export const installHint = "npm i -D typescript5@npm:typescript@^5.9 (pnpm add -D typescript5@npm:typescript@^5.9)"

/** `require` of one package: its exports, or a throw (MODULE_NOT_FOUND when it is not installed). */
export type Load = (name: string) => unknown

const notFound = (cause: unknown) => (cause as { code?: unknown }).code === "MODULE_NOT_FOUND"

const hasApi = (exports: unknown): exports is Api =>
  typeof exports === "object" &&
  exports !== null &&
  typeof (exports as Partial<Api>).createProgram === "function" &&
  typeof (exports as Partial<Api>).ModuleKind === "object"

const versionOf = (exports: unknown): string =>
  typeof exports === "object" && exports !== null && typeof (exports as { version?: unknown }).version === "string"
    ? (exports as { version: string }).version
    : "unknown"

/**
 * The first of {@link packageNames} that has the compiler API, each looked up in `places` in turn (the project,
 * then this package); else why none does, in one line.
 */
export const find = (places: ReadonlyArray<Load>): Result.Result<Api, CodegenError> => {
  const withoutApi: Array<string> = []
  for (const name of packageNames) {
    for (const load of places) {
      let exports: unknown
      try {
        exports = load(name)
      } catch (cause) {
        if (notFound(cause)) continue
        throw cause
      }
      if (hasApi(exports)) return Result.succeed(exports)
      const seen = `${name} ${versionOf(exports)}`
      if (!withoutApi.includes(seen)) withoutApi.push(seen)
    }
  }
  const what =
    withoutApi.length === 1 && withoutApi[0]!.startsWith("typescript ")
      ? `${withoutApi[0]!.slice("typescript ".length)} has`
      : `${withoutApi.join(" and ")} have`
  return Result.fail(
    new CodegenError({
      reason: "CompilerUnavailable",
      path: "typescript",
      detail:
        withoutApi.length === 0
          ? `not installed: whizbang-codegen needs the TypeScript 5 or 6 compiler API: npm i -D typescript@^5.9 (beside TypeScript 7: ${installHint})`
          : `${what} no compiler API for JavaScript (TypeScript 7 is a native compiler): install TypeScript 5 beside it as typescript5, which whizbang-codegen loads first: ${installHint}`
    })
  )
}

/** The API every scan reads; assigned by {@link load}. */
export let ts: Api

const byRoot = new Map<string, Result.Result<Api, CodegenError>>()

/** Finds the API for the project at `root` (once per root and process) and points {@link ts} at it. */
export const load = (root: string): Result.Result<Api, CodegenError> => {
  const key = Path.resolve(root)
  let result = byRoot.get(key)
  if (result === undefined) {
    result = find([createRequire(Path.join(key, "package.json")), createRequire(import.meta.url)])
    byRoot.set(key, result)
  }
  if (Result.isSuccess(result)) ts = result.success
  return result
}
