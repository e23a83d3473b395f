/**
 * @whizbang/codegen — scans events, perspectives and receptors with the TypeScript compiler API and generates
 * the registries and perspective tables; a CLI (`whizbang-codegen`) and a Vite plugin.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Cli from "./Cli.js"
/** @since 0.1.0 */
export * as Codegen from "./Codegen.js"
/** @since 0.1.0 */
export * as CodegenConfig from "./CodegenConfig.js"
/** @since 0.1.0 */
export * as CodegenError from "./CodegenError.js"
/** @since 0.1.0 */
export * as Definitions from "./Definitions.js"
/** @since 0.1.0 */
export * as Diagnostic from "./Diagnostic.js"
/** @since 0.1.0 */
export * as Generator from "./Generator.js"
/** @since 0.1.0 */
export * as Scanner from "./Scanner.js"
/** @since 0.1.0 */
export * as VitePlugin from "./VitePlugin.js"
