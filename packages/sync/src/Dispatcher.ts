/**
 * The dispatcher: invokes the receptors registered with it, in this process, applying their
 * `awaitPerspectiveSync` declarations first (see `ReceptorSync` for the rules).
 *
 * - `localInvoke(message)`: the one receptor of the message's type runs; its result is returned.
 * - `localInvoke(message, { waitForPerspectives: true })`: then waits until every perspective processed the
 *   events appended while it ran (`EventCompletionAwaiter`) — RPC-style completion.
 * - `send(message)`: every receptor of the type runs, in registration order; no result.
 *
 * Messages are events (`Dispatcher.event(envelope)`) or commands (`Dispatcher.command(type, payload)`). Only
 * events trigger perspective sync. A handler reads its sync outcome with `yield* SyncContext.Current`.
 *
 * **Gotchas**: the handler runs in the caller's scoped event tracker, or a fresh one when there is none, so
 * events it appends through `TrackedEventStore` are what `waitForPerspectives` waits for. Sync waits inside an
 * inline lifecycle stage are refused with `InlineStageSyncError`.
 *
 * @since 0.1.0
 */
import { type Envelope, EventId, Receptor } from "@whizbang/core"
import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import { EventCompletionAwaiter } from "./EventCompletionAwaiter.js"
import { InlineLifecycleStage } from "./InlineLifecycleStage.js"
import type { PerspectiveSyncAwaiter } from "./PerspectiveSyncAwaiter.js"
import * as ReceptorSync from "./ReceptorSync.js"
import * as ScopedEventTracker from "./ScopedEventTracker.js"
import * as SyncContext from "./SyncContext.js"
import {
  DispatchError,
  InlineStageSyncError,
  PerspectiveSyncDeadLetteredError,
  PerspectiveSyncFailingError,
  PerspectiveSyncTimeoutError,
  ReceptorFailed,
  type SyncArgumentError
} from "./SyncError.js"

/**
 * A message to dispatch.
 *
 * @category models
 * @since 0.1.0
 */
export type Message =
  | { readonly _tag: "Event"; readonly envelope: Envelope.Envelope }
  | { readonly _tag: "Command"; readonly envelope: Envelope.Envelope }

/**
 * An event message (an envelope as stored or delivered).
 *
 * @category constructors
 * @since 0.1.0
 */
export const event = (envelope: Envelope.Envelope): Message => ({ _tag: "Event", envelope })

/**
 * A command message; receptors see it as an envelope with a fresh id (`streamId` empty unless given).
 *
 * @category constructors
 * @since 0.1.0
 */
export const command = (
  type: string,
  payload: unknown,
  options?: { readonly streamId?: string; readonly commandId?: string }
): Effect.Effect<Message> =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const id = options?.commandId ?? EventId.unsafeMake()
    return {
      _tag: "Command",
      envelope: {
        eventId: id,
        streamId: options?.streamId ?? "",
        streamVersion: 0,
        eventType: type,
        payload,
        metadata: { correlationId: id, causationId: null, timestamp: new Date(now).toISOString() },
        scope: {}
      }
    }
  })

/**
 * Options of `localInvoke`.
 *
 * @category models
 * @since 0.1.0
 */
export interface DispatchOptions {
  /** After the handler, wait until every perspective processed the events it appended. */
  readonly waitForPerspectives?: boolean | undefined
  /**
   * Timeout of that wait; default 5 s. On timeout: `PerspectiveSyncTimeoutError` (perspective undefined); when
   * a perspective dead-lettered one of the events: `PerspectiveSyncDeadLetteredError`; when one is failing at one
   * of them (retry backoff): `PerspectiveSyncFailingError`.
   */
  readonly timeout?: Duration.Input | undefined
}

/**
 * Errors of a dispatch.
 *
 * @category models
 * @since 0.1.0
 */
export type DispatchFailure =
  | DispatchError
  | PerspectiveSyncTimeoutError
  | PerspectiveSyncDeadLetteredError
  | PerspectiveSyncFailingError
  | InlineStageSyncError
  | SyncArgumentError
  | ReceptorFailed

/**
 * The dispatcher's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface DispatcherShape {
  readonly localInvoke: <A = unknown>(message: Message, options?: DispatchOptions) => Effect.Effect<A, DispatchFailure>
  readonly send: (message: Message) => Effect.Effect<void, DispatchFailure>
}

/**
 * The dispatcher service.
 *
 * @category services
 * @since 0.1.0
 */
export class Dispatcher extends Context.Service<Dispatcher, DispatcherShape>()("@whizbang/sync/Dispatcher") {}

/**
 * Layer options.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  readonly receptors: ReadonlyArray<Receptor.Receptor>
  /** The global default of `awaitPerspectiveSync` timeouts (declarations without one). Default 5 s. */
  readonly defaultSyncTimeout?: Duration.Input | undefined
}

/** Runs `effect` in the caller's scope (or a fresh one) and returns the ids of the events it recorded there. */
const inScope = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(ScopedEventTracker.Current, (current) => {
    const run = Effect.gen(function* () {
      const before = (yield* ScopedEventTracker.getEmittedEvents()).length
      const value = yield* effect
      const emitted = (yield* ScopedEventTracker.getEmittedEvents()).slice(before).map((e) => e.eventId)
      return [value, emitted] as const
    })
    return Option.isSome(current) ? run : ScopedEventTracker.withScope(run)
  })

/**
 * Makes the dispatcher.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function* (options: Options) {
  // Receptors are plain values: their mistakes surface here, when the dispatcher is built.
  yield* Effect.forEach(options.receptors, Receptor.validate, { discard: true })
  const context = yield* Effect.context<PerspectiveSyncAwaiter | EventCompletionAwaiter>()
  const completion = yield* EventCompletionAwaiter
  const defaultTimeout = options.defaultSyncTimeout ?? ReceptorSync.defaultTimeout
  const receptorsFor = (type: string) => options.receptors.filter((r) => r.handles.includes(type))

  const runReceptor = (receptor: Receptor.Receptor, message: Message) =>
    Effect.gen(function* () {
      const contexts =
        message._tag === "Event"
          ? yield* ReceptorSync.awaitFor(receptor, message.envelope, defaultTimeout).pipe(Effect.provideContext(context))
          : []
      return yield* receptor.handle(message.envelope).pipe(
        Effect.mapError((cause) => new ReceptorFailed({ receptor: receptor.name, cause })),
        Effect.provideService(SyncContext.Current, ReceptorSync.worst(contexts)),
        Effect.provideService(SyncContext.All, contexts)
      )
    })

  const localInvoke = <A>(message: Message, dispatch?: DispatchOptions): Effect.Effect<A, DispatchFailure> =>
    Effect.gen(function* () {
      const type = message.envelope.eventType
      const found = receptorsFor(type)
      if (found.length === 0) return yield* new DispatchError({ reason: { _tag: "NoReceptor", messageType: type } })
      if (found.length > 1) {
        return yield* new DispatchError({ reason: { _tag: "AmbiguousReceptor", messageType: type, receptors: found.map((r) => r.name) } })
      }
      const receptor = found[0]!
      const [value, emitted] = yield* inScope(runReceptor(receptor, message))
      if (dispatch?.waitForPerspectives === true) {
        if (yield* InlineLifecycleStage) return yield* new InlineStageSyncError({ perspectiveName: "(all perspectives)" })
        const timeout = dispatch.timeout ?? Duration.seconds(5)
        const result = yield* completion.waitForEvents(emitted, { timeout })
        if (result._tag === "TimedOut") {
          return yield* new PerspectiveSyncTimeoutError({
            receptor: receptor.name,
            perspectiveName: undefined,
            streamId: undefined,
            eventsAwaited: emitted.length,
            timeout: Duration.fromInputUnsafe(timeout),
            pending: result.pending
          })
        }
        if (result._tag === "DeadLettered") {
          return yield* new PerspectiveSyncDeadLetteredError({
            receptor: receptor.name,
            perspectiveName: undefined,
            deadLettered: result.deadLettered
          })
        }
        if (result._tag === "Failing") {
          return yield* new PerspectiveSyncFailingError({
            receptor: receptor.name,
            perspectiveName: undefined,
            failing: result.failing,
            pending: result.pending
          })
        }
      }
      return value as A
    })

  const send = (message: Message): Effect.Effect<void, DispatchFailure> =>
    Effect.gen(function* () {
      const found = receptorsFor(message.envelope.eventType)
      if (found.length === 0) return yield* new DispatchError({ reason: { _tag: "NoReceptor", messageType: message.envelope.eventType } })
      yield* inScope(Effect.forEach(found, (r) => runReceptor(r, message), { discard: true }))
    })

  return Dispatcher.of({ localInvoke, send })
})

/**
 * The dispatcher for `receptors`; needs the awaiters. Building it validates the receptors (`Receptor.validate`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  options: Options
): Layer.Layer<Dispatcher, Receptor.InvalidReceptor, PerspectiveSyncAwaiter | EventCompletionAwaiter> =>
  Layer.effect(Dispatcher, make(options))
