// `locks list | release --force`.
import { Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import * as Locks from "../Locks.js"
import { refused } from "../OperationError.js"
import { confirm, output, withDatabase, yesFlag } from "./context.js"
import { table } from "./render.js"

const filters = {
  stream: Flag.String("stream").pipe(Flag.withAlias("s"), Flag.optional),
  perspective: Flag.String("perspective").pipe(Flag.withAlias("p"), Flag.optional),
  instance: Flag.String("instance").pipe(Flag.withDescription("the holder's instance id"), Flag.optional)
}

const toFilter = (flags: {
  readonly stream: Option.Option<string>
  readonly perspective: Option.Option<string>
  readonly instance: Option.Option<string>
}): Locks.Filter => ({
  streamId: Option.getOrUndefined(flags.stream),
  perspective: Option.getOrUndefined(flags.perspective),
  instanceId: Option.getOrUndefined(flags.instance)
})

const list = Command.make("list", filters, (flags) =>
  withDatabase(
    Effect.gen(function* () {
      const locks = yield* Locks.list(toFilter(flags))
      yield* output(locks, (rows) =>
        table(
          ["STREAM", "PERSPECTIVE", "HOLDER", "REASON", "EXPIRES"],
          rows.map((l) => [
            l.streamId,
            l.perspective,
            l.instanceId,
            l.reason ?? "-",
            `${l.expiresAt ?? "never"}${l.expired ? " (expired)" : ""}`
          ])
        )
      )
    })
  )
).pipe(Command.withDescription("Held stream locks."))

const release = Command.make(
  "release",
  {
    ...filters,
    force: Flag.Boolean("force").pipe(Flag.withDescription("required: releases locks whoever holds them"), Flag.withDefault(false)),
    yes: yesFlag
  },
  (flags) =>
    withDatabase(
      Effect.gen(function* () {
        if (!flags.force) return yield* refused("locks release clears locks held by other instances; pass --force")
        const filter = toFilter(flags)
        const held = yield* Locks.list(filter)
        if (held.length > 0) yield* confirm(`force-release ${held.length} stream lock(s)?`, flags.yes)
        const released = held.length === 0 ? [] : yield* Locks.forceRelease(filter)
        yield* output(released, (rows) =>
          rows.length === 0
            ? "no matching locks"
            : `released ${rows.length} lock(s)\n${table(
                ["STREAM", "PERSPECTIVE", "WAS HELD BY", "REASON"],
                rows.map((r) => [r.streamId, r.perspective, r.heldBy, r.reason ?? "-"])
              )}`
        )
      })
    )
).pipe(Command.withDescription("Force-release stream locks (needs --force; asks for confirmation; --yes without a terminal)."))

export const locks = Command.make("locks").pipe(Command.withDescription("Stream locks."), Command.withSubcommands([list, release]))
