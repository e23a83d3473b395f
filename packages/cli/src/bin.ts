#!/usr/bin/env node
/**
 * The `whizbang` executable.
 *
 * Built on `@effect/platform-node-shared` rather than `@effect/platform-node`: the latter also brings an HTTP client
 * (undici, Node 22.19+) that the CLI never uses, and its dependency range on the shared package drifts ahead of the
 * user's `effect`.
 *
 * @since 0.1.0
 */
import * as NodeChildProcessSpawner from "@effect/platform-node-shared/NodeChildProcessSpawner"
import * as NodeFileSystem from "@effect/platform-node-shared/NodeFileSystem"
import * as NodePath from "@effect/platform-node-shared/NodePath"
import * as NodeRuntime from "@effect/platform-node-shared/NodeRuntime"
import * as NodeStdio from "@effect/platform-node-shared/NodeStdio"
import * as NodeTerminal from "@effect/platform-node-shared/NodeTerminal"
import { Effect, Layer } from "effect"
import * as Cli from "./Cli.js"

const platform = Layer.provideMerge(
  NodeChildProcessSpawner.layer,
  Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeStdio.layer, NodeTerminal.layer)
)

const main: Effect.Effect<void, unknown> = Cli.run(process.argv.slice(2)).pipe(
  Effect.provide(platform),
  Effect.flatMap((code: number) => Effect.sync(() => process.exit(code)))
)

NodeRuntime.runMain(main)
