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
 * **A filter that can match nothing says so** — it never answers `NoPendingEvents` as if the read model were fresh:
 * - an `and` no event can meet (`forStream(a).andStream(b)`, `forEventTypes("A").andEventTypes("B")`, anywhere in
 *   the tree): `build` fails with `SyncFilterError` (`MatchesNothing`);
 * - event types the perspective does not handle: the wait fails with `SyncArgumentError` (`ImpossibleFilter`);
 * - a filter that selects only the current scope's events (`currentScope()`, `...andCurrentScope()`) outside a
 *   scope: the wait fails with `SyncArgumentError` (`NoScope`); open one with `ScopedEventTracker.withScope`.
 * Inside a scope that emitted nothing it matches, `currentScope()` answers `NoPendingEvents` with `eventsAwaited`
 * 0: the scope wrote nothing the read model could lack.
 *
 * Streams, event types and `all` select, besides this scope's events, the events still pending in the database
 * (with `PgSyncInquiry`) — of the streams named, or of every stream for event types alone and `all` — so they
 * hold on an instance that did not append; a stream named also brings its events still in dead letters (the read
 * model lacks them: the wait answers `DeadLettered`, naming them).
 *
 * @since 0.1.0
 */
import { EventId } from "@whizbang/core"
import { Duration, Effect, Option } from "effect"
import * as FilterTerms from "./internal/filterTerms.js"
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
      if (issue !== undefined) return Effect.fail(new SyncFilterError({ reason: issue }))
      return Effect.as(check(state.filter), {
        filter: state.filter,
        timeout: state.timeout,
        debuggerAwareTimeout: state.debuggerAwareTimeout
      })
    }
  }
}

const make = (filter: SyncFilterNode, issues: ReadonlyArray<SyncFilterIssue> = []): SyncFilterBuilder =>
  builder({ filter, timeout: defaultTimeout, debuggerAwareTimeout: true, issues })

/**
 * Events of one stream: this scope's, this process's tracked ones and, with `PgSyncInquiry`, those the database
 * has pending for the stream or still in its dead letters. The id must be a UUID.
 *
 * @category constructors
 * @since 0.1.0
 */
export const forStream = (streamId: string): SyncFilterBuilder =>
  make({ _tag: "Stream", streamId }, EventId.isUuid(streamId) ? [] : [{ _tag: "InvalidStreamId", streamId }])

/**
 * Events of any of these types (one or many): this scope's, this process's tracked ones and, with
 * `PgSyncInquiry`, those the database has pending on any stream. No types at all is an error.
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
 * Every event emitted in the current scope: open one with `ScopedEventTracker.withScope` around the code that
 * appends and waits. Outside a scope a wait with this filter fails with `SyncArgumentError` (`NoScope`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const currentScope = (): SyncFilterBuilder => make({ _tag: "CurrentScope" })

/**
 * Every pending event of the perspective: this scope's, this process's tracked ones and, with `PgSyncInquiry`,
 * every event the database has pending for it (up to its discovery limit). Broad: prefer a stream or event-type
 * filter.
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
 * Fails with `SyncFilterError` (`MatchesNothing`) when no event can match the tree: an `and` of two different
 * streams, or of event types with none in common. `build` runs it; awaiters run it on options built by hand.
 *
 * @category validation
 * @since 0.4.0
 */
export const check = (filter: SyncFilterNode): Effect.Effect<void, SyncFilterError> =>
  FilterTerms.matchesNothing(filter)
    ? Effect.fail(new SyncFilterError({ reason: { _tag: "MatchesNothing", filter: FilterTerms.render(filter) } }))
    : Effect.void

/**
 * True when only events of the current scope can match the tree (`currentScope()`, `x.andCurrentScope()`, an
 * `or` of such): outside a scope it matches nothing, and awaiters refuse the wait (`SyncArgumentError`, `NoScope`).
 *
 * @category predicates
 * @since 0.4.0
 */
export const needsScope = (filter: SyncFilterNode): boolean => FilterTerms.needsScope(filter)

/**
 * True for a {@link SyncFilterBuilder} (as opposed to built {@link SyncOptions}).
 *
 * @category guards
 * @since 0.1.0
 */
export const isBuilder = (u: SyncOptions | SyncFilterBuilder): u is SyncFilterBuilder => "build" in u
