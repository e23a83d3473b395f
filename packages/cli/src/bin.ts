#!/usr/bin/env node
/**
 * The `whizbang` executable.
 *
 * @since 0.1.0
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect } from "effect"
import * as Cli from "./Cli.js"

const main: Effect.Effect<void, unknown> = Cli.run(process.argv.slice(2)).pipe(
  Effect.provide(NodeServices.layer),
  Effect.flatMap((code: number) => Effect.sync(() => process.exit(code)))
)

NodeRuntime.runMain(main)
