/**
 * The errors of running codegen itself (as opposed to {@link Diagnostic}s about the scanned code): a missing or
 * invalid configuration, an unreadable tsconfig, a file that could not be written, no TypeScript compiler API
 * (`CompilerUnavailable`: `typescript` is TypeScript 7, a native compiler, and no `typescript5` beside it).
 *
 * @since 0.1.0
 */
import { Data } from "effect"

/**
 * Why a run could not proceed.
 *
 * @category models
 * @since 0.1.0
 */
export type Reason = "ConfigNotFound" | "ConfigInvalid" | "TsconfigInvalid" | "WriteFailed" | "CompilerUnavailable"

/**
 * Codegen could not run: `reason` says which step failed, `detail` says what to fix.
 *
 * @category errors
 * @since 0.1.0
 */
export class CodegenError extends Data.TaggedError("CodegenError")<{
  readonly reason: Reason
  readonly path: string
  readonly detail: string
}> {
  override get message(): string {
    return `${this.path}: ${this.detail}`
  }
}
