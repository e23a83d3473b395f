/**
 * The `whizbang-codegen` command line.
 *
 * ```sh
 * whizbang-codegen generate [--watch] [--config whizbang.codegen.json]
 * whizbang-codegen check [--watch] [--include 'src/**\/*.ts'] [--out src/whizbang.generated.ts]
 * ```
 *
 * Exit codes: 0 success; 1 error diagnostics (printed as `file:line:col - error code: message`) or, for
 * `check`, a generated file that is missing or out of date; 2 bad usage or configuration.
 *
 * @since 0.1.0
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { parseArgs } from "node:util"
import { Effect, Result } from "effect"
import * as Codegen from "./Codegen.js"
import * as CodegenConfig from "./CodegenConfig.js"
import * as Diagnostic from "./Diagnostic.js"
import type * as Scanner from "./Scanner.js"

/**
 * Where the CLI writes and which directory it runs in.
 *
 * @category models
 * @since 0.1.0
 */
export interface Io {
  readonly cwd: string
  readonly out: (line: string) => void
  readonly err: (line: string) => void
}

/**
 * A running `--watch`: keeps the process alive until closed.
 *
 * @category models
 * @since 0.1.0
 */
export interface Watching {
  readonly close: () => void
}

/**
 * The help text.
 *
 * @category constants
 * @since 0.1.0
 */
export const usage = `Usage: whizbang-codegen <generate|check> [options]

  generate              scan and write the generated module (left untouched when unchanged)
  check                 fail when there are errors or the generated module is missing or out of date

Options:
  --watch               run again whenever a scanned file changes
  --config <path>       config file (default: ./${CodegenConfig.fileName} when present)
  --include <glob>      files to scan, repeatable (default: ${CodegenConfig.defaults.include.join(" ")})
  --exclude <glob>      files to skip, repeatable
  --out <path>          the generated module (default: ${CodegenConfig.defaults.out})
  --tsconfig <path>     tsconfig for module resolution (default: ./tsconfig.json when present)
  --import-extension <.js|.ts|none>   how generated imports end (default: .js)
  --no-drizzle          leave out the drizzle tables`

const nodeIo: Io = { cwd: process.cwd(), out: (line) => console.log(line), err: (line) => console.error(line) }

const show = (io: Io, path: string) => {
  const relative = Path.relative(io.cwd, path)
  return relative.startsWith("..") ? path : relative
}

const report = (io: Io, result: Codegen.Report): void => {
  for (const diagnostic of result.diagnostics) io.err(Diagnostic.format(diagnostic, io.cwd))
  const file = show(io, result.outFile)
  const errors = result.diagnostics.filter((d) => d.severity === "error").length
  switch (result.status) {
    case "written":
      return io.out(`whizbang-codegen: wrote ${file}`)
    case "unchanged":
      return io.out(`whizbang-codegen: ${file} unchanged`)
    case "up-to-date":
      return io.out(`whizbang-codegen: ${file} is up to date`)
    case "stale":
      return io.err(`whizbang-codegen: ${file} is out of date: run whizbang-codegen generate`)
    case "not-generated":
      return io.err(`whizbang-codegen: ${errors} error${errors === 1 ? "" : "s"}, ${file} not generated`)
  }
}

const parse = (argv: ReadonlyArray<string>) =>
  parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      watch: { type: "boolean" },
      config: { type: "string" },
      include: { type: "string", multiple: true },
      exclude: { type: "string", multiple: true },
      out: { type: "string" },
      tsconfig: { type: "string" },
      "import-extension": { type: "string" },
      "no-drizzle": { type: "boolean" },
      help: { type: "boolean", short: "h" }
    }
  })

/**
 * Runs the CLI: returns the exit code, or a {@link Watching} handle with `--watch`.
 *
 * @category entry points
 * @since 0.1.0
 */
export const main = (argv: ReadonlyArray<string>, io: Io = nodeIo): number | Watching => {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (error) {
    io.err(`whizbang-codegen: ${error instanceof Error ? error.message : String(error)}\n\n${usage}`)
    return 2
  }
  const { positionals, values } = parsed
  if (values.help === true) {
    io.out(usage)
    return 0
  }
  const command = positionals[0]
  if ((command !== "generate" && command !== "check") || positionals.length > 1) {
    io.err(`whizbang-codegen: expected "generate" or "check", got ${positionals.join(" ") || "nothing"}\n\n${usage}`)
    return 2
  }
  const extension = values["import-extension"]
  if (extension !== undefined && ![".js", ".ts", "none"].includes(extension)) {
    io.err(`whizbang-codegen: --import-extension must be .js, .ts or none, got ${extension}`)
    return 2
  }
  const overrides: CodegenConfig.ConfigFile = {
    ...(values.include === undefined ? {} : { include: values.include }),
    ...(values.exclude === undefined ? {} : { exclude: values.exclude }),
    ...(values.out === undefined ? {} : { out: values.out }),
    ...(values.tsconfig === undefined ? {} : { tsconfig: values.tsconfig }),
    ...(extension === undefined ? {} : { importExtension: extension === "none" ? "" : (extension as ".js" | ".ts") }),
    ...(values["no-drizzle"] === true ? { drizzle: false } : {})
  }
  const loaded = Effect.runSync(Effect.result(CodegenConfig.load({ cwd: io.cwd, configFile: values.config, overrides })))
  if (Result.isFailure(loaded)) {
    io.err(`whizbang-codegen: ${loaded.failure.message}`)
    return 2
  }
  const config = loaded.success
  let previous: Scanner.Result | undefined
  const runOnce = (): number => {
    const run = command === "generate" ? Codegen.generate(config, { previous }) : Codegen.check(config, { previous })
    const outcome = Effect.runSync(Effect.result(run))
    if (Result.isFailure(outcome)) {
      io.err(`whizbang-codegen: ${outcome.failure.message}`)
      return 2
    }
    previous = outcome.success.scan
    report(io, outcome.success)
    return Codegen.failed(outcome.success) ? 1 : 0
  }
  const code = runOnce()
  if (values.watch !== true) return code
  return watch(config, io, runOnce)
}

const watch = (config: CodegenConfig.Config, io: Io, runOnce: () => number): Watching | number => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const onChange = (directory: string) => (_event: string, name: string | Buffer | null) => {
    const file = name === null ? undefined : Path.resolve(directory, name.toString())
    if (file === config.outFile || (file !== undefined && !/\.[mc]?tsx?$/.test(file))) return
    // Editors save in bursts (write + rename): coalesce one burst into one run.
    if (timer !== undefined) clearTimeout(timer)
    timer = setTimeout(() => {
      timer = undefined
      runOnce()
    }, 25)
  }
  const watchers: Array<Fs.FSWatcher> = []
  const close = () => {
    if (timer !== undefined) clearTimeout(timer)
    for (const watcher of watchers) watcher.close()
  }
  // A watch the system refuses (EMFILE/ENOSPC: too many inotify instances or watches) ends the run saying so.
  const refused = (directory: string, error: unknown) => {
    close()
    io.err(`whizbang-codegen: cannot watch ${show(io, directory) || "."}: ${error instanceof Error ? error.message : String(error)}`)
    process.exitCode = 2
  }
  for (const directory of CodegenConfig.watchDirectories(config).filter((d) => Fs.existsSync(d))) {
    try {
      watchers.push(Fs.watch(directory, { recursive: true }, onChange(directory)).on("error", (error) => refused(directory, error)))
    } catch (error) {
      refused(directory, error)
      return 2
    }
  }
  io.out(
    `whizbang-codegen: watching ${CodegenConfig.watchDirectories(config)
      .map((d) => show(io, d) || ".")
      .join(", ")}`
  )
  return { close }
}
