#!/usr/bin/env node
/**
 * The `whizbang-codegen` executable: see {@link Cli}.
 *
 * @since 0.1.0
 */
import { main } from "./Cli.js"

const result = main(process.argv.slice(2))
if (typeof result === "number") process.exitCode = result
