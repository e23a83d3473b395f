/**
 * Diagnostics: definition mistakes found while scanning, each with the file, line and column to fix.
 *
 * Errors make `generate` refuse to write and `check` exit non-zero; warnings are printed and do not fail
 * the run (an event handled by a perspective may legitimately be defined outside the scanned files).
 *
 * @since 0.1.0
 */
import * as Path from "node:path"

/**
 * How bad a diagnostic is.
 *
 * @category models
 * @since 0.1.0
 */
export type Severity = "error" | "warning"

/**
 * What a diagnostic is about, as a stable code (shown in messages, asserted by tests).
 *
 * @category models
 * @since 0.1.0
 */
export type Code =
  | "duplicate-event-type"
  | "duplicate-perspective-name"
  | "missing-stream-id"
  | "invalid-event-type"
  | "invalid-perspective-name"
  | "invalid-perspective-version"
  | "missing-handler"
  | "unknown-event-type"
  | "unknown-perspective"
  | "awaited-event-not-handled"
  | "not-importable"
  | "dynamic-definition"

/**
 * One finding, positioned at a 1-based line and column.
 *
 * @category models
 * @since 0.1.0
 */
export interface Diagnostic {
  readonly severity: Severity
  readonly code: Code
  readonly message: string
  readonly file: string
  readonly line: number
  readonly column: number
}

/**
 * `true` when any diagnostic is an error.
 *
 * @category predicates
 * @since 0.1.0
 */
export const hasErrors = (diagnostics: ReadonlyArray<Diagnostic>): boolean => diagnostics.some((d) => d.severity === "error")

/**
 * Formats a diagnostic the way compilers do, so terminals and editors link to the position:
 * `src/orders.ts:12:7 - error duplicate-perspective-name: ...`. Paths are shown relative to `cwd`.
 *
 * @category formatting
 * @since 0.1.0
 */
export const format = (diagnostic: Diagnostic, cwd: string = process.cwd()): string => {
  const relative = Path.relative(cwd, diagnostic.file)
  const file = relative.startsWith("..") || Path.isAbsolute(relative) ? diagnostic.file : relative
  return `${file.split(Path.sep).join("/")}:${diagnostic.line}:${diagnostic.column} - ${diagnostic.severity} ${diagnostic.code}: ${diagnostic.message}`
}

/**
 * Orders diagnostics by file, line, column, then code: output is the same on every run.
 *
 * @category combinators
 * @since 0.1.0
 */
export const sort = (diagnostics: ReadonlyArray<Diagnostic>): ReadonlyArray<Diagnostic> =>
  [...diagnostics].sort(
    (a, b) => compare(a.file, b.file) || a.line - b.line || a.column - b.column || compare(a.code, b.code) || compare(a.message, b.message)
  )

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
