/**
 * The scanner: reads a project's sources with the TypeScript compiler API and finds every
 * `EventDefinition.make`, `Perspective.make` and `Receptor.make` call, without running any of it.
 *
 * Only the matched files enter the program (no lib, no dependencies), so a scan takes milliseconds; imports
 * between scanned files are still followed, which is how `[OrderPlaced.type]` or `perspective: orderSummary.name`
 * resolve. Anything that cannot be known statically (a name computed at run time, a spread of an unknown object)
 * becomes a `dynamic-definition` diagnostic instead of a guess.
 *
 * @since 0.1.0
 */
import * as Path from "node:path"
import { Result as R } from "effect"
import type TS from "typescript"
import type { EventDefinitionInfo, PerspectiveInfo, ReceptorInfo } from "./Definitions.js"
import * as Diagnostic from "./Diagnostic.js"
import * as Compiler from "./internal/compiler.js"
import * as Extract from "./internal/extract.js"
import { type Kind, makeCallKind, positionOf, topLevelConst, whizbangImports } from "./internal/syntax.js"
import { validate } from "./internal/validate.js"

/**
 * What to scan. `include`/`exclude` are glob patterns relative to `root` (`src/**\/*.ts`); `.d.ts` files and
 * `node_modules` are always skipped.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  readonly root: string
  readonly include: ReadonlyArray<string>
  readonly exclude?: ReadonlyArray<string> | undefined
  /** Absolute paths never scanned (the generated module itself). */
  readonly ignoreFiles?: ReadonlyArray<string> | undefined
  /** Module resolution settings (from the project's tsconfig); defaults to NodeNext. */
  readonly compilerOptions?: CompilerOptions | undefined
  /** A previous result, whose program is reused for files that did not change (watch mode). */
  readonly previous?: Result | undefined
}

/**
 * The definitions found, sorted by file and position, and the diagnostics (sorted too).
 *
 * @category models
 * @since 0.1.0
 */
export interface Result {
  readonly files: ReadonlyArray<string>
  readonly events: ReadonlyArray<EventDefinitionInfo>
  readonly perspectives: ReadonlyArray<PerspectiveInfo>
  readonly receptors: ReadonlyArray<ReceptorInfo>
  readonly diagnostics: ReadonlyArray<Diagnostic.Diagnostic>
  /** The compiler's program, opaque: hand the result back as `previous` and the next scan reuses it. */
  readonly program: unknown
}

/**
 * Compiler options as the TypeScript compiler API reads them from a tsconfig (`CodegenConfig.load` does): typed
 * loosely, so these declarations never name the `typescript` package, which may be TypeScript 7 in your app.
 *
 * @category models
 * @since 0.5.0
 */
export interface CompilerOptions {
  readonly [option: string]: unknown
}

// The compiler API (see internal/compiler.ts); a missing one throws its `CodegenError` (`CodegenConfig.load` and
// `Codegen` report it as a failure before any scan).
const api = (root: string): Compiler.Api => {
  const found = Compiler.load(root)
  if (R.isFailure(found)) throw found.failure
  return found.success
}

/**
 * The file extensions scanned.
 *
 * @category constants
 * @since 0.1.0
 */
export const extensions: ReadonlyArray<string> = [".ts", ".tsx", ".mts", ".cts"]

/**
 * The files `options` select, sorted.
 *
 * @category constructors
 * @since 0.1.0
 */
export const files = (options: Pick<Options, "root" | "include" | "exclude" | "ignoreFiles">): ReadonlyArray<string> => {
  const ignored = new Set((options.ignoreFiles ?? []).map((file) => Path.resolve(file)))
  return api(options.root)
    .sys.readDirectory(options.root, extensions, ["**/node_modules", ...(options.exclude ?? [])], options.include)
    .filter((file) => !/\.d\.[mc]?tsx?$/.test(file) && !ignored.has(Path.resolve(file)))
    .sort()
}

const defaultCompilerOptions = (ts: Compiler.Api): TS.CompilerOptions => ({
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022
})

/**
 * Scans the selected files.
 *
 * @category constructors
 * @since 0.1.0
 */
export const scan = (options: Options): Result => {
  const ts = api(options.root)
  const roots = files(options)
  const program = ts.createProgram({
    rootNames: roots,
    // Only the scanned files: no lib, no dependencies' declarations. Imports between scanned files still resolve.
    // The options came from the compiler itself (a tsconfig it parsed), typed loosely only in our declarations.
    options: {
      ...defaultCompilerOptions(ts),
      ...(options.compilerOptions as TS.CompilerOptions | undefined),
      noResolve: true,
      noLib: true,
      types: [],
      noEmit: true
    },
    // A program of an earlier scan (`Result.program`), opaque to callers.
    ...(options.previous === undefined ? {} : { oldProgram: options.previous.program as TS.Program })
  })
  const checker = program.getTypeChecker()
  const diagnostics: Array<Diagnostic.Diagnostic> = []
  const context: Extract.Context = {
    checker,
    report: (node, severity, code, message) => diagnostics.push({ severity, code, message, ...positionOf(node) }),
    reportAt: (position, severity, code, message) => diagnostics.push({ severity, code, message, ...position }),
    events: new Map(),
    perspectives: new Map()
  }
  const calls: Record<Kind, Array<TS.CallExpression>> = { EventDefinition: [], Perspective: [], Receptor: [] }
  for (const fileName of roots) {
    const file = program.getSourceFile(fileName)
    if (file === undefined) continue
    const imports = whizbangImports(file)
    if (imports.named.size === 0 && imports.namespaces.size === 0) continue
    const visit = (node: TS.Node): void => {
      if (ts.isCallExpression(node)) {
        const kind = makeCallKind(node, imports)
        if (kind !== undefined) calls[kind].push(node)
      }
      ts.forEachChild(node, visit)
    }
    visit(file)
  }
  const collect = <A>(
    list: ReadonlyArray<TS.CallExpression>,
    extract: (call: TS.CallExpression) => A | undefined,
    into?: Map<TS.Declaration, A>
  ) => {
    const out: Array<A> = []
    for (const call of list) {
      const found = extract(call)
      if (found === undefined) continue
      out.push(found)
      const declaration = topLevelConst(call)
      if (into !== undefined && declaration !== undefined) into.set(declaration, found)
    }
    return out
  }
  const events = collect(calls.EventDefinition, (call) => Extract.extractEvent(context, call), context.events)
  const perspectives = collect(calls.Perspective, (call) => Extract.extractPerspective(context, call), context.perspectives)
  const receptors = collect(calls.Receptor, (call) => Extract.extractReceptor(context, call))
  diagnostics.push(...validate(events, perspectives, receptors))
  return { files: roots, events, perspectives, receptors, diagnostics: Diagnostic.sort(diagnostics), program }
}
