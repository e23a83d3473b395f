// What the service registered (`wh_perspective_versions`): resolves a perspective name given on the command line to
// one registered version and checks event types against those it handles, so an operation on a misspelled name or
// type is refused before anything is written.
import { Perspective } from "@whizbang/core"
import type { PgClient } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Effect } from "effect"
import { invalidInput, NotFound, OperationError } from "../OperationError.js"
import { run } from "./database.js"

export interface Registered {
  /** The version's key: the base name for version 1, `<base>__v<N>` after. */
  readonly key: string
  readonly baseName: string
  readonly version: number
  readonly state: "building" | "ready" | "live" | "retiring" | "retired"
  readonly eventTypes: ReadonlyArray<string>
}

/** Every registered version; empty on a schema without the registry. */
export const load: Effect.Effect<ReadonlyArray<Registered>, OperationError, PgClient.PgClient> = Effect.gen(function* () {
  const registry = yield* run(PgOperations.Registry.hasRegistry)
  if (!registry.present) return []
  const rows = yield* run(PgOperations.Registry.registered)
  return rows.map((r) => ({ key: r.perspectiveName, baseName: r.baseName, version: r.version, state: r.state, eventTypes: r.eventTypes }))
})

/**
 * The version `name` means: a key with a version suffix (`balance__v2`, also `balance__v1` for version 1's key
 * `balance`) names that version; a base name names the base's live version, else the version keyed by it.
 */
export const resolve = (name: string, registered: ReadonlyArray<Registered>): Registered | undefined => {
  const { baseName, version } = Perspective.parseKey(name)
  if (name !== baseName) return registered.find((r) => r.key === Perspective.keyOf(baseName, version))
  return registered.find((r) => r.baseName === name && r.state === "live") ?? registered.find((r) => r.key === name)
}

/** The registered keys an operator can act on (retired versions left out), for refusal messages. */
export const names = (registered: ReadonlyArray<Registered>): string =>
  registered
    .filter((r) => r.state !== "retired")
    .map((r) => r.key)
    .join(", ") || "none"

/** `NotFound`, naming what is registered. */
export const unknownPerspective = (name: string, registered: ReadonlyArray<Registered>): OperationError =>
  new OperationError({
    reason: new NotFound({ what: "perspective", id: name }),
    message:
      registered.length === 0
        ? `unknown perspective "${name}": no perspective is registered in this schema (an instance of the service registers its perspectives when it starts; is --schema the service's?)`
        : `unknown perspective "${name}"; registered: ${names(registered)}`
  })

/**
 * The event types to act on: `requested` when every one is handled by `target` (duplicates dropped), every type
 * `target` handles when `requested` is empty. An unknown type (no registered perspective handles it) or one that
 * `target` does not handle is `InvalidInput` (option `event-type`), naming the types it handles.
 */
export const eventTypes = (
  target: Registered,
  requested: ReadonlyArray<string>,
  registered: ReadonlyArray<Registered>
): Effect.Effect<ReadonlyArray<string>, OperationError> => {
  if (requested.length === 0) return Effect.succeed(target.eventTypes)
  const wanted = [...new Set(requested)]
  const problems = wanted.flatMap((type) => {
    if (target.eventTypes.includes(type)) return []
    const handlers = registered.filter((r) => r.state !== "retired" && r.eventTypes.includes(type)).map((r) => r.key)
    return handlers.length === 0
      ? [`unknown event type "${type}": no registered perspective handles it`]
      : [`${target.key} does not handle "${type}" (${handlers.join(", ")} ${handlers.length === 1 ? "does" : "do"})`]
  })
  return problems.length === 0
    ? Effect.succeed(wanted)
    : Effect.fail(invalidInput("event-type", `${problems.join("; ")}; ${target.key} handles: ${target.eventTypes.join(", ")}`))
}
