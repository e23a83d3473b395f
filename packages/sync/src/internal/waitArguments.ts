/**
 * The arguments of a wait, checked before it starts (every public way to wait calls these), and the names a
 * perspective's events go by: a name is its base name or any version's key, and both mean the serving versions of
 * that base.
 *
 * @internal
 */
import { EventId, Perspective } from "@whizbang/core"
import { Duration, Effect, Option } from "effect"
import { SyncArgumentError } from "../SyncError.js"
import type { SyncInquiryPortShape } from "../SyncInquiryPort.js"

/** @internal */
export const timeoutOf = (
  input: Duration.Input | undefined,
  fallback: Duration.Duration
): Effect.Effect<Duration.Duration, SyncArgumentError> => {
  if (input === undefined) return Effect.succeed(fallback)
  const decoded = Duration.fromInput(input)
  return Option.isSome(decoded) && !Duration.isNegative(decoded.value)
    ? Effect.succeed(decoded.value)
    : Effect.fail(new SyncArgumentError({ reason: { _tag: "InvalidTimeout", timeout: input } }))
}

/** @internal */
export const checkEventIds = (eventIds: ReadonlyArray<unknown>): Effect.Effect<void, SyncArgumentError> => {
  const bad = eventIds.find((id) => typeof id !== "string" || !EventId.isUuid(id))
  return bad === undefined && eventIds.every((id) => typeof id === "string")
    ? Effect.void
    : Effect.fail(new SyncArgumentError({ reason: { _tag: "InvalidEventId", eventId: bad } }))
}

/** @internal */
export const checkStreamId = (streamId: unknown): Effect.Effect<void, SyncArgumentError> =>
  typeof streamId === "string" && EventId.isUuid(streamId)
    ? Effect.void
    : Effect.fail(new SyncArgumentError({ reason: { _tag: "InvalidStreamId", streamId } }))

/**
 * Whether the port knows the perspective: a name is its base name or any version's key, and both mean the
 * serving versions of that base, so a base is known when any known key has it.
 *
 * @internal
 */
export const knowsPerspective = (known: ReadonlyMap<string, unknown>, perspectiveName: string): boolean => {
  if (known.has(perspectiveName)) return true
  const { baseName } = Perspective.parseKey(perspectiveName)
  for (const key of known.keys()) if (Perspective.parseKey(key).baseName === baseName) return true
  return false
}

/**
 * The event types the perspective's versions known to the port handle (every known key of its base name);
 * undefined when the port does not say.
 *
 * @internal
 */
export const handledBy = (port: SyncInquiryPortShape, perspectiveName: string): ReadonlySet<string> | undefined => {
  if (port.perspectives === undefined) return undefined
  const { baseName } = Perspective.parseKey(perspectiveName)
  const out = new Set<string>()
  let found = false
  for (const [key, types] of port.perspectives) {
    if (Perspective.parseKey(key).baseName !== baseName) continue
    found = true
    for (const t of types) out.add(t)
  }
  return found ? out : undefined
}

/**
 * The names the in-process tracker may hold the perspective's events under: the name asked for and every key of
 * its base name the port knows (the versions this service runs).
 *
 * @internal
 */
export const trackerKeys = (port: SyncInquiryPortShape, perspectiveName: string): ReadonlyArray<string> => {
  const { baseName } = Perspective.parseKey(perspectiveName)
  const keys = new Set([perspectiveName])
  for (const key of port.perspectives?.keys() ?? []) if (Perspective.parseKey(key).baseName === baseName) keys.add(key)
  return [...keys]
}

/** @internal */
export const checkPerspective = (port: SyncInquiryPortShape, perspectiveName: unknown): Effect.Effect<void, SyncArgumentError> =>
  port.perspectives === undefined || (typeof perspectiveName === "string" && knowsPerspective(port.perspectives, perspectiveName))
    ? Effect.void
    : Effect.fail(
        new SyncArgumentError({ reason: { _tag: "UnknownPerspective", perspectiveName, known: [...(port.perspectives?.keys() ?? [])] } })
      )
