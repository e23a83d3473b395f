/**
 * Configuration: `whizbang.codegen.json` (or CLI flags / Vite plugin options, which override it).
 *
 * ```json
 * {
 *   "include": ["src/**\/*.ts"],
 *   "exclude": ["src/**\/*.test.ts"],
 *   "out": "src/whizbang.generated.ts",
 *   "tsconfig": "tsconfig.json",
 *   "importExtension": ".js",
 *   "drizzle": { "schema": "orders" }
 * }
 * ```
 *
 * Paths are relative to the directory of the config file, or to the working directory when there is none.
 * Without `tsconfig`, a `tsconfig.json` beside the config is used when it exists (for module resolution only).
 *
 * @since 0.1.0
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Effect, Schema } from "effect"
import type TS from "typescript"
import { CodegenError } from "./CodegenError.js"
import * as Compiler from "./internal/compiler.js"
import type { CompilerOptions } from "./Scanner.js"

/**
 * The default config file name, looked up in the working directory.
 *
 * @category constants
 * @since 0.1.0
 */
export const fileName = "whizbang.codegen.json"

/**
 * The JSON shape of the config file (every key optional).
 *
 * @category schemas
 * @since 0.1.0
 */
export const ConfigFile = Schema.Struct({
  include: Schema.optionalKey(Schema.Array(Schema.String)),
  exclude: Schema.optionalKey(Schema.Array(Schema.String)),
  out: Schema.optionalKey(Schema.String),
  tsconfig: Schema.optionalKey(Schema.String),
  importExtension: Schema.optionalKey(Schema.Literals([".js", ".ts", ""])),
  drizzle: Schema.optionalKey(Schema.Union([Schema.Literal(false), Schema.Struct({ schema: Schema.optionalKey(Schema.String) })]))
})

/**
 * The config file's decoded form; also the type of overrides.
 *
 * @category models
 * @since 0.1.0
 */
export type ConfigFile = typeof ConfigFile.Type

/**
 * A resolved configuration: absolute paths, defaults filled in, compiler options read.
 *
 * @category models
 * @since 0.1.0
 */
export interface Config {
  readonly root: string
  readonly include: ReadonlyArray<string>
  readonly exclude: ReadonlyArray<string>
  readonly outFile: string
  readonly compilerOptions: CompilerOptions | undefined
  readonly importExtension: ".js" | ".ts" | ""
  readonly drizzle: false | { readonly schema?: string | undefined }
}

/**
 * Defaults for keys that neither the file nor the overrides set.
 *
 * @category constants
 * @since 0.1.0
 */
export const defaults = { include: ["src/**/*.ts"], out: "src/whizbang.generated.ts" } as const

/**
 * Where to look and what to override.
 *
 * @category models
 * @since 0.1.0
 */
export interface LoadOptions {
  readonly cwd: string
  /** An explicit config file: it must exist. Without it, `whizbang.codegen.json` in `cwd` is used when present. */
  readonly configFile?: string | undefined
  readonly overrides?: ConfigFile | undefined
}

const readJson = (path: string, reason: "ConfigInvalid") =>
  Effect.try({
    try: () => JSON.parse(Fs.readFileSync(path, "utf8")) as unknown,
    catch: (cause) =>
      new CodegenError({ reason, path, detail: `cannot read JSON: ${cause instanceof Error ? cause.message : String(cause)}` })
  })

const readFile = (path: string) =>
  Effect.gen(function* () {
    const json = yield* readJson(path, "ConfigInvalid")
    return yield* Schema.decodeUnknownEffect(ConfigFile, { onExcessProperty: "error", errors: "all" })(json).pipe(
      Effect.mapError((error) => new CodegenError({ reason: "ConfigInvalid", path, detail: error.message.replace(/\n\s*/g, " ") }))
    )
  })

const compilerOptions = (ts: Compiler.Api, path: string): Effect.Effect<TS.CompilerOptions, CodegenError> => {
  const read = ts.readConfigFile(path, ts.sys.readFile)
  const failed = (diagnostic: TS.Diagnostic) =>
    new CodegenError({ reason: "TsconfigInvalid", path, detail: ts.flattenDiagnosticMessageText(diagnostic.messageText, " ") })
  if (read.error !== undefined) return Effect.fail(failed(read.error))
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, Path.dirname(path), undefined, path)
  // "No inputs found" does not matter here: only the module-resolution options are used.
  const fatal = parsed.errors.find((d) => d.code !== 18003)
  return fatal === undefined ? Effect.succeed(parsed.options) : Effect.fail(failed(fatal))
}

/**
 * Finds the TypeScript compiler API (`typescript5` first, then `typescript`; a `CodegenError` with reason
 * `CompilerUnavailable` says in one line what to install when `typescript` is TypeScript 7), reads the config file
 * (when there is one), applies the overrides and defaults, and reads the tsconfig.
 *
 * @category constructors
 * @since 0.1.0
 */
export const load = (options: LoadOptions): Effect.Effect<Config, CodegenError> =>
  Effect.gen(function* () {
    const explicit = options.configFile === undefined ? undefined : Path.resolve(options.cwd, options.configFile)
    if (explicit !== undefined && !Fs.existsSync(explicit)) {
      return yield* new CodegenError({ reason: "ConfigNotFound", path: explicit, detail: "no such config file" })
    }
    const implicit = Path.join(options.cwd, fileName)
    const path = explicit ?? (Fs.existsSync(implicit) ? implicit : undefined)
    const file = path === undefined ? {} : yield* readFile(path)
    const merged: ConfigFile = { ...file, ...options.overrides }
    const root = path === undefined ? Path.resolve(options.cwd) : Path.dirname(path)
    const ts = yield* Effect.fromResult(Compiler.load(root))
    const include = merged.include ?? defaults.include
    if (include.length === 0) {
      return yield* new CodegenError({ reason: "ConfigInvalid", path: path ?? root, detail: "include must name at least one glob" })
    }
    const tsconfig =
      merged.tsconfig === undefined
        ? Fs.existsSync(Path.join(root, "tsconfig.json"))
          ? Path.join(root, "tsconfig.json")
          : undefined
        : Path.resolve(root, merged.tsconfig)
    return {
      root,
      include,
      exclude: merged.exclude ?? [],
      outFile: Path.resolve(root, merged.out ?? defaults.out),
      compilerOptions: tsconfig === undefined ? undefined : yield* compilerOptions(ts, tsconfig),
      importExtension: merged.importExtension ?? ".js",
      drizzle: merged.drizzle ?? {}
    }
  })

/**
 * The directories to watch for `config`: the part of each include glob before its first wildcard.
 *
 * @category combinators
 * @since 0.1.0
 */
export const watchDirectories = (config: Config): ReadonlyArray<string> => {
  const directories = config.include.map((pattern) => {
    const fixed: Array<string> = []
    for (const segment of pattern.split("/")) {
      if (/[*?[{]/.test(segment)) break
      fixed.push(segment)
    }
    const directory = Path.resolve(config.root, ...fixed)
    // A pattern naming one file (`src/events.ts`) is watched through its directory.
    return fixed.length === pattern.split("/").length ? Path.dirname(directory) : directory
  })
  return [...new Set(directories)].sort()
}
