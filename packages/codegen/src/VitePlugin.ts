/**
 * The Vite plugin: regenerates the module at build start (also under vitest, whose server runs `buildStart`)
 * and whenever a scanned file is added, changed or removed while the dev server runs.
 *
 * ```ts
 * // vite.config.ts or vitest.config.ts
 * import { whizbangCodegen } from "@whizbang/codegen/vite"
 * export default defineConfig({ plugins: [whizbangCodegen({ include: ["src/**\/*.ts"] })] })
 * ```
 *
 * **Gotchas**: error diagnostics fail `vite build` but only warn in dev (the dev server keeps running and the
 * file is regenerated once they are fixed); set `failOnError` to choose. Vite is an optional peer dependency.
 *
 * @since 0.1.0
 */
import * as Path from "node:path"
import { Effect, Result } from "effect"
import type { Plugin } from "vite"
import * as Codegen from "./Codegen.js"
import * as CodegenConfig from "./CodegenConfig.js"
import * as Diagnostic from "./Diagnostic.js"
import type * as Scanner from "./Scanner.js"

/**
 * Plugin options: any key of the config file, plus where to find it.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options extends CodegenConfig.ConfigFile {
  /** A config file, relative to `cwd`; without it `whizbang.codegen.json` in `cwd` is used when present. */
  readonly config?: string
  /** Defaults to Vite's `root`. */
  readonly cwd?: string
  /** Fail on error diagnostics; default: in `vite build` yes, in dev and vitest no (they are logged). */
  readonly failOnError?: boolean
}

const run = <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E>): A => {
  const result = Effect.runSync(Effect.result(effect))
  if (Result.isFailure(result)) throw new Error(`[whizbang-codegen] ${result.failure.message}`)
  return result.success
}

/**
 * `true` when a change to `file` can change the generated module.
 *
 * @category predicates
 * @since 0.1.0
 */
export const isScanned = (config: CodegenConfig.Config, file: string): boolean => {
  const path = Path.resolve(file)
  return (
    path !== config.outFile &&
    /\.[mc]?tsx?$/.test(path) &&
    !/\.d\.[mc]?tsx?$/.test(path) &&
    !path.split(Path.sep).includes("node_modules") &&
    CodegenConfig.watchDirectories(config).some((directory) => path.startsWith(directory + Path.sep))
  )
}

/**
 * The plugin.
 *
 * @category constructors
 * @since 0.1.0
 */
export const whizbangCodegen = (options: Options = {}): Plugin => {
  const { config: configFile, cwd: fixedCwd, failOnError, ...overrides } = options
  let cwd = fixedCwd
  let command: "build" | "serve" = "serve"
  let log: { readonly info: (message: string) => void; readonly warn: (message: string) => void } = console
  let config: CodegenConfig.Config | undefined
  let previous: Scanner.Result | undefined

  const resolveConfig = (): CodegenConfig.Config =>
    (config ??= run(CodegenConfig.load({ cwd: cwd ?? process.cwd(), configFile, overrides })))
  const regenerate = (): Codegen.Report => {
    const report = run(Codegen.generate(resolveConfig(), { previous }))
    previous = report.scan
    return report
  }
  const summary = (report: Codegen.Report, root: string) => {
    const errors = report.diagnostics.filter((d) => d.severity === "error").length
    return `[whizbang-codegen] ${errors} error${errors === 1 ? "" : "s"}, ${Path.relative(root, report.outFile)} not generated`
  }

  return {
    name: "whizbang-codegen",
    enforce: "pre",
    configResolved(resolved) {
      cwd ??= resolved.root
      command = resolved.command
      log = resolved.logger
    },
    buildStart() {
      const report = regenerate()
      const root = resolveConfig().root
      for (const diagnostic of report.diagnostics) this.warn(Diagnostic.format(diagnostic, root))
      if (report.status === "not-generated") {
        if (failOnError ?? command === "build") this.error(summary(report, root))
        else this.warn(summary(report, root))
      } else if (report.status === "written") log.info(`[whizbang-codegen] wrote ${Path.relative(root, report.outFile)}`)
    },
    configureServer(server) {
      const current = resolveConfig()
      server.watcher.add([...CodegenConfig.watchDirectories(current)])
      const onFile = (file: string) => {
        if (!isScanned(current, file)) return
        const report = regenerate()
        for (const diagnostic of report.diagnostics) log.warn(Diagnostic.format(diagnostic, current.root))
        if (report.status === "not-generated") log.warn(summary(report, current.root))
        else if (report.status === "written") log.info(`[whizbang-codegen] wrote ${Path.relative(current.root, report.outFile)}`)
      }
      server.watcher.on("add", onFile)
      server.watcher.on("change", onFile)
      server.watcher.on("unlink", onFile)
    }
  }
}
