/**
 * Running codegen: scan, render, and either write the module (`generate`) or compare it with the file on disk
 * (`check`). An unchanged module is never rewritten, so its mtime stays and watchers do not fire.
 *
 * ```ts
 * const config = yield* CodegenConfig.load({ cwd: process.cwd() })
 * const report = yield* Codegen.generate(config)
 * if (Codegen.failed(report)) console.error(report.diagnostics.map((d) => Diagnostic.format(d)).join("\n"))
 * ```
 *
 * @since 0.1.0
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Effect } from "effect"
import { CodegenError } from "./CodegenError.js"
import type { Config } from "./CodegenConfig.js"
import * as Diagnostic from "./Diagnostic.js"
import * as Generator from "./Generator.js"
import * as Compiler from "./internal/compiler.js"
import * as Scanner from "./Scanner.js"

/**
 * The outcome for the generated file: `written`, `unchanged` (generate); `up-to-date`, `stale` (check);
 * `not-generated` when error diagnostics stopped the run.
 *
 * @category models
 * @since 0.1.0
 */
export type Status = "written" | "unchanged" | "up-to-date" | "stale" | "not-generated"

/**
 * What a run did.
 *
 * @category models
 * @since 0.1.0
 */
export interface Report {
  readonly status: Status
  readonly outFile: string
  /** The rendered module; `undefined` when error diagnostics stopped the run. */
  readonly content: string | undefined
  readonly diagnostics: ReadonlyArray<Diagnostic.Diagnostic>
  readonly scan: Scanner.Result
}

/**
 * `true` when the run should exit non-zero: error diagnostics, or (check) a stale file.
 *
 * @category predicates
 * @since 0.1.0
 */
export const failed = (report: Report): boolean => report.status === "stale" || report.status === "not-generated"

// The compiler API is checked first: a TypeScript 7 `typescript` is a typed failure here, not a throw from the scan.
const render = (config: Config, previous: Scanner.Result | undefined) =>
  Effect.map(Effect.fromResult(Compiler.load(config.root)), () => {
    const scan = Scanner.scan({
      root: config.root,
      include: config.include,
      exclude: config.exclude,
      ignoreFiles: [config.outFile],
      compilerOptions: config.compilerOptions,
      previous
    })
    const content = Diagnostic.hasErrors(scan.diagnostics)
      ? undefined
      : Generator.render(scan, { outFile: config.outFile, importExtension: config.importExtension, drizzle: config.drizzle })
    return { scan, content }
  })

const readExisting = (path: string): string | undefined => (Fs.existsSync(path) ? Fs.readFileSync(path, "utf8") : undefined)

/**
 * Scans and writes the module when its content changed. `write: false` renders in memory only
 * (the status says what writing would have done).
 *
 * @category runs
 * @since 0.1.0
 */
export const generate = (
  config: Config,
  options: { readonly previous?: Scanner.Result | undefined; readonly write?: boolean } = {}
): Effect.Effect<Report, CodegenError> =>
  Effect.gen(function* () {
    const { content, scan } = yield* render(config, options.previous)
    const base = { outFile: config.outFile, content, diagnostics: scan.diagnostics, scan }
    if (content === undefined) return { ...base, status: "not-generated" as const }
    if (readExisting(config.outFile) === content) return { ...base, status: "unchanged" as const }
    if (options.write !== false) {
      yield* Effect.try({
        try: () => {
          Fs.mkdirSync(Path.dirname(config.outFile), { recursive: true })
          Fs.writeFileSync(config.outFile, content)
        },
        catch: (cause) =>
          new CodegenError({ reason: "WriteFailed", path: config.outFile, detail: cause instanceof Error ? cause.message : String(cause) })
      })
    }
    return { ...base, status: "written" as const }
  })

/**
 * Scans and compares the module with the file on disk, writing nothing: `stale` when it is missing or differs.
 *
 * @category runs
 * @since 0.1.0
 */
export const check = (
  config: Config,
  options: { readonly previous?: Scanner.Result | undefined } = {}
): Effect.Effect<Report, CodegenError> =>
  Effect.map(render(config, options.previous), ({ content, scan }) => ({
    status: content === undefined ? "not-generated" : readExisting(config.outFile) === content ? "up-to-date" : "stale",
    outFile: config.outFile,
    content,
    diagnostics: scan.diagnostics,
    scan
  }))
