/**
 * The sync filter builder: which emitted events a perspective sync waits for, and for how long.
 *
 * Entry points are {@link forStream}, {@link forEventTypes}, {@link currentScope} and {@link all}; combinators
 * (`and`, `or`, `andStream`, `orStream`, `andEventTypes`, `orEventTypes`, `andCurrentScope`) nest left to right,
 * so `forStream(s).andEventTypes("A").or(forEventTypes("B"))` is `(stream s AND type A) OR type B`.
 *
 * Builders are immutable: every call returns a new builder, so a shared base filter can be extended safely.
 * Bad input (a stream id that is not a UUID, no event types, a negative timeout) is remembered and reported by
 * {@link SyncFilterBuilder.build} as a typed {@link SyncFilterError}, which keeps the fluent chain free of effects.
 *
 * @since 0.1.0
 */
import { EventId } from "@whizbang/core"
import { Duration, Effect, Option } from "effect"
import { SyncFilterError, type SyncFilterIssue } from "./SyncError.js"

/**
 * The filter tree.
 *
 * @category models
 * @since 0.1.0
 */
export type SyncFilterNode =
  | { readonly _tag: "Stream"; readonly streamId: string }
  | { readonly _tag: "EventTypes"; readonly eventTypes: ReadonlyArray<string> }
  | { readonly _tag: "CurrentScope" }
  | { readonly _tag: "All" }
  | { readonly _tag: "And"; readonly left: SyncFilterNode; readonly right: SyncFilterNode }
  | { readonly _tag: "Or"; readonly left: SyncFilterNode; readonly right: SyncFilterNode }

/**
 * What a built filter is matched against. `inCurrentScope` is true when the current scope emitted the event.
 *
 * @category models
 * @since 0.1.0
 */
export interface Candidate {
  readonly streamId: string
  readonly eventType: string
  readonly inCurrentScope: boolean
}

/**
 * A built filter: the tree, the timeout and whether time spent frozen (debugger, SIGSTOP) is discounted.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyncOptions {
  readonly filter: SyncFilterNode
  readonly timeout: Duration.Duration
  readonly debuggerAwareTimeout: boolean
}

/**
 * The default sync timeout: 5 seconds.
 *
 * @category constants
 * @since 0.1.0
 */
export const defaultTimeout: Duration.Duration = Duration.seconds(5)

/**
 * Event types as accepted by the builder: any number of names or arrays of names.
 *
 * @category models
 * @since 0.1.0
 */
export type EventTypesInput = ReadonlyArray<string | ReadonlyArray<string> | null | undefined>

/**
 * The fluent builder. Every method returns a new builder.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyncFilterBuilder {
  readonly filter: SyncFilterNode
  readonly timeout: Duration.Duration
  readonly debuggerAwareTimeout: boolean
  readonly issues: ReadonlyArray<SyncFilterIssue>
  readonly and: (other: SyncFilterBuilder) => SyncFilterBuilder
  readonly or: (other: SyncFilterBuilder) => SyncFilterBuilder
  readonly andStream: (streamId: string) => SyncFilterBuilder
  readonly orStream: (streamId: string) => SyncFilterBuilder
  readonly andEventTypes: (...eventTypes: EventTypesInput) => SyncFilterBuilder
  readonly orEventTypes: (...eventTypes: EventTypesInput) => SyncFilterBuilder
  readonly andCurrentScope: () => SyncFilterBuilder
  /** Zero is allowed (check once, do not wait); negative is an error at `build`. Numbers are milliseconds. */
  readonly withTimeout: (timeout: Duration.Input) => SyncFilterBuilder
  readonly withDebuggerAwareTimeout: (enabled: boolean) => SyncFilterBuilder
  /** The options, or the first input problem as a {@link SyncFilterError}. */
  readonly build: () => Effect.Effect<SyncOptions, SyncFilterError>
}

interface State {
  readonly filter: SyncFilterNode
  readonly timeout: Duration.Duration
  readonly debuggerAwareTimeout: boolean
  readonly issues: ReadonlyArray<SyncFilterIssue>
}

const builder = (state: State): SyncFilterBuilder => {
  const combine = (tag: "And" | "Or", other: SyncFilterBuilder): SyncFilterBuilder =>
    builder({
      ...state,
      filter: { _tag: tag, left: state.filter, right: other.filter },
      issues: [...state.issues, ...other.issues]
    })
  return {
    ...state,
    and: (other) => combine("And", other),
    or: (other) => combine("Or", other),
    andStream: (streamId) => combine("And", forStream(streamId)),
    orStream: (streamId) => combine("Or", forStream(streamId)),
    andEventTypes: (...eventTypes) => combine("And", forEventTypes(...eventTypes)),
    orEventTypes: (...eventTypes) => combine("Or", forEventTypes(...eventTypes)),
    andCurrentScope: () => combine("And", currentScope()),
    withTimeout: (timeout) => {
      // Numbers are checked directly: Duration.fromInput turns NaN into zero.
      const millis =
        typeof timeout === "number" ? timeout : Option.match(Duration.fromInput(timeout), { onNone: () => NaN, onSome: Duration.toMillis })
      return Number.isNaN(millis) || millis < 0
        ? builder({ ...state, issues: [...state.issues, { _tag: "InvalidTimeout", timeout }] })
        : builder({ ...state, timeout: Duration.millis(millis) })
    },
    withDebuggerAwareTimeout: (enabled) => builder({ ...state, debuggerAwareTimeout: enabled }),
    build: () => {
      const [issue] = state.issues
      return issue === undefined
        ? Effect.succeed({ filter: state.filter, timeout: state.timeout, debuggerAwareTimeout: state.debuggerAwareTimeout })
        : Effect.fail(new SyncFilterError({ reason: issue }))
    }
  }
}

const make = (filter: SyncFilterNode, issues: ReadonlyArray<SyncFilterIssue> = []): SyncFilterBuilder =>
  builder({ filter, timeout: defaultTimeout, debuggerAwareTimeout: true, issues })

/**
 * Events of one stream. The id must be a UUID.
 *
 * @category constructors
 * @since 0.1.0
 */
export const forStream = (streamId: string): SyncFilterBuilder =>
  make({ _tag: "Stream", streamId }, EventId.isUuid(streamId) ? [] : [{ _tag: "InvalidStreamId", streamId }])

/**
 * Events of any of these types (one or many). No types at all is an error.
 *
 * @category constructors
 * @since 0.1.0
 */
export const forEventTypes = (...eventTypes: EventTypesInput): SyncFilterBuilder => {
  const flat = eventTypes.flatMap((t): ReadonlyArray<unknown> => (Array.isArray(t) ? t : t == null ? [] : [t]))
  const invalid = flat.filter((t) => typeof t !== "string" || t.length === 0)
  const issues: Array<SyncFilterIssue> =
    flat.length === 0 ? [{ _tag: "MissingEventTypes" }] : invalid.map((eventType) => ({ _tag: "InvalidEventType", eventType }))
  return make({ _tag: "EventTypes", eventTypes: [...new Set(flat.filter((t): t is string => typeof t === "string"))] }, issues)
}

/**
 * Every event emitted in the current scope (see `ScopedEventTracker.withScope`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const currentScope = (): SyncFilterBuilder => make({ _tag: "CurrentScope" })

/**
 * Every pending event of the perspective. Broad: prefer a stream or event-type filter.
 *
 * @category constructors
 * @since 0.1.0
 */
export const all = (): SyncFilterBuilder => make({ _tag: "All" })

/**
 * Whether an event matches a filter tree.
 *
 * @category predicates
 * @since 0.1.0
 */
export const matches = (filter: SyncFilterNode, candidate: Candidate): boolean => {
  switch (filter._tag) {
    case "Stream":
      return candidate.streamId === filter.streamId
    case "EventTypes":
      return filter.eventTypes.includes(candidate.eventType)
    case "CurrentScope":
      return candidate.inCurrentScope
    case "All":
      return true
    case "And":
      return matches(filter.left, candidate) && matches(filter.right, candidate)
    case "Or":
      return matches(filter.left, candidate) || matches(filter.right, candidate)
  }
}

/**
 * True for a {@link SyncFilterBuilder} (as opposed to built {@link SyncOptions}).
 *
 * @category guards
 * @since 0.1.0
 */
export const isBuilder = (u: SyncOptions | SyncFilterBuilder): u is SyncFilterBuilder => "build" in u
