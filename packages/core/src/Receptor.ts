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
import { Context, Data, Duration, Effect, Option } from "effect"
import type { Envelope } from "./Envelope.js"
import type * as EventDefinition from "./EventDefinition.js"
import type { LifecycleStage, StageMode } from "./LifecycleStage.js"
import type * as Perspective from "./Perspective.js"

/**
 * Declares that a receptor waits until a perspective has processed the incoming event(s) before it runs —
 * whether the dispatcher invokes it or the worker fires it at a lifecycle stage (with `@whizbang/sync`'s
 * `ReceptorSync.layerWorkerGate`). `timeout` absent means the global default (5 s); `eventTypes` absent means
 * every pending event of the stream; `fireBehavior` `"FireOnSuccess"` (default) skips the handler on a timeout or
 * a dead-lettered event, `"FireAlways"` runs it with the outcome in its `SyncContext`.
 *
 * @category models
 * @since 0.1.0
 */
export interface AwaitPerspectiveSync {
  readonly perspective: string
  readonly eventTypes?: ReadonlyArray<string>
  readonly timeout?: Duration.Input | undefined
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
export type EnvelopeOf<H> = H extends string
  ? Envelope<unknown, H>
  : H extends EventDefinition.EventDefinition<infer Type, infer S>
    ? Envelope<S["Type"], Type>
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
  if (receptor.stage !== undefined && receptor.mode === "inline" && receptor.awaitPerspectiveSync.length > 0) {
    return fail(
      'a receptor the worker fires inline cannot awaitPerspectiveSync: it would wait on the worker running it (a deadlock); use mode "detached"'
    )
  }
  for (const sync of receptor.awaitPerspectiveSync) {
    if (typeof sync.perspective !== "string" || sync.perspective.length === 0) {
      return fail("awaitPerspectiveSync.perspective must name a perspective")
    }
    if (sync.timeout !== undefined) {
      const timeout = Duration.fromInput(sync.timeout)
      if (Option.isNone(timeout) || Duration.isNegative(timeout.value)) {
        return fail(
          `awaitPerspectiveSync.timeout must be a zero or positive duration (absent: the default), got ${JSON.stringify(sync.timeout)}`
        )
      }
    }
  }
  return Effect.succeed(receptor)
}

/**
 * Runs a receptor's `awaitPerspectiveSync` waits, then its handler — what the perspective worker uses for
 * receptors it fires at lifecycle stages. `@whizbang/sync` provides it (with `PerspectiveSyncAwaiter.layer`).
 *
 * @category models
 * @since 0.2.0
 */
export interface SyncGateShape {
  readonly run: (receptor: Receptor, envelope: Envelope, handler: Effect.Effect<unknown, unknown>) => Effect.Effect<unknown, unknown>
}

/**
 * The sync gate in context, if any. A worker-fired receptor that declares `awaitPerspectiveSync` fails with
 * {@link SyncGateMissing} (logged; the handler does not run) when none is provided, rather than running early.
 *
 * @category references
 * @since 0.2.0
 */
export const SyncGate: Context.Reference<Option.Option<SyncGateShape>> = Context.Reference("@whizbang/core/Receptor/SyncGate", {
  defaultValue: () => Option.none()
})

/**
 * A worker-fired receptor declares `awaitPerspectiveSync`, but no sync gate is in the worker's context.
 *
 * @category errors
 * @since 0.2.0
 */
export class SyncGateMissing extends Data.TaggedError("SyncGateMissing")<{ readonly receptor: string }> {
  override get message(): string {
    return `receptor ${JSON.stringify(this.receptor)} declares awaitPerspectiveSync, but the worker has no sync gate: provide @whizbang/sync's PerspectiveSyncAwaiter.layer to the worker's layer`
  }
}

/**
 * Runs `receptor` for `envelope`, through the sync gate when it declares `awaitPerspectiveSync`.
 *
 * @category running
 * @since 0.2.0
 */
export const runGated = (receptor: Receptor, envelope: Envelope): Effect.Effect<unknown, unknown> =>
  receptor.awaitPerspectiveSync.length === 0
    ? receptor.handle(envelope)
    : Effect.flatMap(SyncGate, (gate) =>
        Option.isNone(gate)
          ? Effect.fail(new SyncGateMissing({ receptor: receptor.name }))
          : gate.value.run(receptor, envelope, receptor.handle(envelope))
      )
