/**
 * Receptors: handlers of events (or commands) that a worker fires at a lifecycle stage, or that the dispatcher
 * invokes directly.
 *
 * ```ts
 * const sendConfirmation = Receptor.make({
 *   name: "send_confirmation",
 *   handles: [OrderPaid],
 *   stage: "PostAllPerspectives",          // after every perspective applied the event
 *   handle: (envelope) => outbox.add(envelope.payload.orderId) // payload typed from OrderPaid's schema
 * })
 * ```
 *
 * `make` returns a plain value; {@link validate} (run by the worker and the dispatcher when their layers are
 * built) checks the name and options.
 *
 * A receptor's handler must need no services (`R = never`): build receptors inside an Effect that has the
 * services and close over them. A failing handler is logged and never stops the worker.
 *
 * @since 0.1.0
 */
import { Data, Effect } from "effect"
import type { Envelope } from "./Envelope.js"
import type * as EventDefinition from "./EventDefinition.js"
import type { LifecycleStage, StageMode } from "./LifecycleStage.js"
import type * as Perspective from "./Perspective.js"

/**
 * Declares that a receptor waits until a perspective has processed the incoming event(s) before it runs.
 * `timeoutMilliseconds` -1 (default) means the global default; `eventTypes` absent means every pending event of
 * the stream; `fireBehavior` `"FireOnSuccess"` (default) skips the handler on timeout, `"FireAlways"` runs it with
 * the outcome in its `SyncContext`.
 *
 * @category models
 * @since 0.1.0
 */
export interface AwaitPerspectiveSync {
  readonly perspective: string
  readonly eventTypes?: ReadonlyArray<string>
  readonly timeoutMilliseconds?: number
  readonly fireBehavior?: "FireOnSuccess" | "FireAlways"
}

/**
 * A perspective named by its definition (preferred: a misspelling does not compile) or by its name.
 *
 * @category models
 * @since 0.1.0
 */
export type PerspectiveRef = Perspective.Any | string

const nameOf = (ref: PerspectiveRef): string => (typeof ref === "string" ? ref : ref.name)

/**
 * The envelope a receptor handling `H` receives: a definition's decoded payload, or `unknown` for a type given
 * by name.
 *
 * @category models
 * @since 0.1.0
 */
export type EnvelopeOf<H> = H extends string ? Envelope<unknown, H>
  : H extends EventDefinition.EventDefinition<infer Type, infer S> ? Envelope<S["Type"], Type>
  : never

/**
 * A receptor definition. `Env` is the envelope its handler takes.
 *
 * @category models
 * @since 0.1.0
 */
export interface Receptor<Env extends Envelope<any, string> = Envelope> {
  readonly name: string
  /** Event (or command) type names it handles. */
  readonly handles: ReadonlyArray<string>
  /** When set, the perspective worker fires it at this stage for every handled event. */
  readonly stage?: LifecycleStage | undefined
  /** Default `"inline"`. */
  readonly mode: StageMode
  /** For `PostPerspective`: only after this perspective (default: after each one). */
  readonly perspective?: string | undefined
  readonly awaitPerspectiveSync: ReadonlyArray<AwaitPerspectiveSync>
  // Method syntax on purpose: a receptor of specific events stays assignable to `Receptor`, which the worker
  // and dispatcher hold; they only hand it envelopes of the types it handles.
  handle(envelope: Env): Effect.Effect<unknown, unknown>
}

/**
 * A receptor definition is invalid.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidReceptor extends Data.TaggedError("InvalidReceptor")<{ readonly receptor: string; readonly detail: string }> {
  override get message(): string {
    return `invalid receptor ${JSON.stringify(this.receptor)}: ${this.detail}`
  }
}

const namePattern = /^[A-Za-z][A-Za-z0-9_.:-]{0,99}$/

/**
 * Defines a receptor. Returns a plain value; {@link validate} checks it when a layer is built.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <const Handles extends ReadonlyArray<string | EventDefinition.Any>>(options: {
  readonly name: string
  readonly handles: Handles
  readonly stage?: LifecycleStage
  readonly mode?: StageMode
  readonly perspective?: PerspectiveRef
  readonly awaitPerspectiveSync?: ReadonlyArray<Omit<AwaitPerspectiveSync, "perspective"> & { readonly perspective: PerspectiveRef }>
  readonly handle: (envelope: EnvelopeOf<Handles[number]>) => Effect.Effect<unknown, unknown>
}): Receptor<EnvelopeOf<Handles[number]>> => ({
  name: options.name,
  handles: [...new Set(options.handles.map((h) => (typeof h === "string" ? h : h.type)))],
  stage: options.stage,
  mode: options.mode ?? "inline",
  perspective: options.perspective === undefined ? undefined : nameOf(options.perspective),
  awaitPerspectiveSync: (options.awaitPerspectiveSync ?? []).map((sync) => ({ ...sync, perspective: nameOf(sync.perspective) })),
  handle: options.handle
})

/**
 * Checks a receptor: its name, that it handles something, and its options.
 *
 * @category validation
 * @since 0.1.0
 */
export const validate = <R extends Receptor<any>>(receptor: R): Effect.Effect<R, InvalidReceptor> => {
  const fail = (detail: string) => Effect.fail(new InvalidReceptor({ receptor: String(receptor.name), detail }))
  if (typeof receptor.name !== "string" || !namePattern.test(receptor.name)) {
    return fail("a receptor name is 1-100 characters: a letter, then letters, digits, _ . : -")
  }
  if (receptor.handles.length === 0) return fail("it must handle at least one event type")
  if (receptor.perspective !== undefined && receptor.stage !== "PostPerspective") {
    return fail("`perspective` only applies to the PostPerspective stage")
  }
  for (const sync of receptor.awaitPerspectiveSync) {
    if (sync.timeoutMilliseconds !== undefined && (!Number.isInteger(sync.timeoutMilliseconds) || sync.timeoutMilliseconds < -1)) {
      return fail(`awaitPerspectiveSync.timeoutMilliseconds must be -1 (the default) or a non-negative integer, got ${sync.timeoutMilliseconds}`)
    }
  }
  return Effect.succeed(receptor)
}
