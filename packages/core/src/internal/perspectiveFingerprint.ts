/**
 * A perspective version's fingerprint: a short hash of what decides its rows — its model's shape (as JSON Schema),
 * its initial model, the event types it handles and its handlers' source text. Registries store it with the
 * version, so a start-up can say when a perspective's logic or shape changed while its version did not (its rows
 * were built by the old logic: a new version rebuilds them).
 *
 * Handlers are compared by their source text as this build presents it: a different compiler, bundler or
 * minifier changes it too, so a difference is a reason to look, not proof of a change.
 *
 * @since 0.3.0
 */
import { Schema } from "effect"
import type * as Perspective from "../Perspective.js"

const safeJson = (compute: () => unknown): string => {
  try {
    return JSON.stringify(compute()) ?? "undefined"
  } catch {
    // A schema JSON Schema cannot describe, or a model JSON cannot hold: that part counts as unchanged.
    return "?"
  }
}

/** 64-bit FNV-1a, as 16 hex digits. */
const fnv1a64 = (text: string): string => {
  let hash = 0xcbf29ce484222325n
  const prime = 0x100000001b3n
  const mask = 0xffffffffffffffffn
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i))
    hash = (hash * prime) & mask
  }
  return hash.toString(16).padStart(16, "0")
}

/**
 * The fingerprint of a perspective version (see the module notes).
 *
 * @category constructors
 * @since 0.3.0
 */
export const of = (perspective: Perspective.Any): string => {
  const known = computed.get(perspective)
  if (known !== undefined) return known
  const fingerprint = compute(perspective)
  computed.set(perspective, fingerprint)
  return fingerprint
}

/**
 * Fingerprints by definition: a perspective is a value, and a process with many tenants registers the same
 * definitions at every start of a tenant's services (bench t: 1.5 % of a worker process's time went to them).
 */
const computed = new WeakMap<Perspective.Any, string>()

const compute = (perspective: Perspective.Any): string => {
  const handlers = Object.keys(perspective.handlers)
    .sort()
    .map((type) => `${type}=${String(perspective.handlers[type])}`)
  const parts = [
    `version ${perspective.version}`,
    `events ${[...perspective.eventTypes].sort().join(",")}`,
    `model ${safeJson(() => Schema.toJsonSchemaDocument(perspective.model))}`,
    `initial ${safeJson(() => perspective.initial)}`,
    ...handlers
  ]
  return fnv1a64(parts.join("\n"))
}
