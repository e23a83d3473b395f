import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"

const root = Command.make("whizbang").pipe(Command.withSharedFlags({
  databaseUrl: Flag.String("database-url").pipe(Flag.optional),
  schema: Flag.String("schema").pipe(Flag.withDefault("whizbang")),
  json: Flag.Boolean("json").pipe(Flag.withDefault(false))
}))
const show = Command.make("show", { id: Argument.String("id") }, ({ id }) => Effect.gen(function* () {
  const g = yield* root
  yield* Console.log("show", id, JSON.stringify({ ...g, databaseUrl: Option.getOrNull(g.databaseUrl) }))
  if (id === "bad") return yield* Effect.fail(new Error("boom"))
}))
const types = Command.make("rebuild", { types: Flag.String("event-type").pipe(Flag.atLeast(1)), yes: Flag.Boolean("yes") }, (c) => Console.log(JSON.stringify(c)))
const dl = Command.make("dead-letters").pipe(Command.withSubcommands([show]))
const cli = root.pipe(Command.withSubcommands([dl, types]))
Command.run(cli, { version: "0.1.0" }).pipe(Effect.provide(NodeServices.layer), NodeRuntime.runMain)
