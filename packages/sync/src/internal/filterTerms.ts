/**
 * A sync filter as the union of its terms: each term a stream (or any), a set of event types (or any) and whether
 * only the current scope's events count. An event matches the filter exactly when it matches one term, so the
 * terms answer what the tree alone cannot say at a glance:
 *
 * - **matches nothing**: no term at all — an `and` of two different streams, or of event types with none in
 *   common, wherever it sits in the tree (`SyncFilter.build` refuses it);
 * - **needs a scope**: every term is a scope term — outside a scope the filter can match nothing (the awaiter
 *   refuses the wait);
 * - **what to look for in the database**: the terms that are not scope terms, one discovery query each (a stream's
 *   events, or every stream's, of the term's types).
 *
 * `and` multiplies terms, so a tree of more than {@link maxTerms} terms is not expanded: it counts as matching any
 * event (never refused, and discovery looks at every stream), which can only make a wait longer, never stale.
 *
 * @internal
 */
import type { SyncFilterNode } from "../SyncFilter.js"

/** @internal */
export interface Term {
  /** Undefined: any stream. */
  readonly streamId: string | undefined
  /** Undefined: any type; never empty. */
  readonly eventTypes: ReadonlySet<string> | undefined
  /** Only events of the current scope. */
  readonly scope: boolean
}

/** @internal */
export const maxTerms = 1024

const any: Term = { streamId: undefined, eventTypes: undefined, scope: false }

const intersect = (a: Term, b: Term): Term | undefined => {
  if (a.streamId !== undefined && b.streamId !== undefined && a.streamId !== b.streamId) return undefined
  let eventTypes = a.eventTypes ?? b.eventTypes
  if (a.eventTypes !== undefined && b.eventTypes !== undefined) {
    eventTypes = new Set([...a.eventTypes].filter((t) => b.eventTypes!.has(t)))
    if (eventTypes.size === 0) return undefined
  }
  return { streamId: a.streamId ?? b.streamId, eventTypes, scope: a.scope || b.scope }
}

const expand = (node: SyncFilterNode): ReadonlyArray<Term> | undefined => {
  switch (node._tag) {
    case "Stream":
      return [{ ...any, streamId: node.streamId }]
    case "EventTypes":
      return node.eventTypes.length === 0 ? [] : [{ ...any, eventTypes: new Set(node.eventTypes) }]
    case "CurrentScope":
      return [{ ...any, scope: true }]
    case "All":
      return [any]
    case "Or": {
      const [left, right] = [expand(node.left), expand(node.right)]
      if (left === undefined || right === undefined || left.length + right.length > maxTerms) return undefined
      return [...left, ...right]
    }
    case "And": {
      const [left, right] = [expand(node.left), expand(node.right)]
      if (left === undefined || right === undefined || left.length * right.length > maxTerms) return undefined
      return left.flatMap((a) => right.flatMap((b) => intersect(a, b) ?? []))
    }
  }
}

/**
 * The filter's terms; a tree too large to expand counts as one term matching any event.
 *
 * @internal
 */
export const terms = (node: SyncFilterNode): ReadonlyArray<Term> => expand(node) ?? [any]

/** True when no event can match the filter. @internal */
export const matchesNothing = (node: SyncFilterNode): boolean => terms(node).length === 0

/** True when only events of the current scope can match the filter (and some can). @internal */
export const needsScope = (node: SyncFilterNode): boolean => {
  const all = terms(node)
  return all.length > 0 && all.every((t) => t.scope)
}

/** One discovery query: a stream (undefined: every stream) and event types (undefined: every type). @internal */
export interface Discovery {
  readonly streamId: string | undefined
  readonly eventTypes: ReadonlyArray<string> | undefined
}

/**
 * The database queries that find every stored event matching the filter outside the current scope, each once:
 * the scope terms dropped, types narrowed to those the perspective handles (`handled`, when known; a term left
 * with none is dropped, and a term with all of them asks for every type).
 *
 * @internal
 */
export const discovery = (node: SyncFilterNode, handled: ReadonlySet<string> | undefined): ReadonlyArray<Discovery> => {
  const out = new Map<string, Discovery>()
  for (const term of terms(node)) {
    if (term.scope) continue
    let types = term.eventTypes === undefined ? undefined : [...term.eventTypes]
    if (handled !== undefined) {
      const narrowed = (types ?? [...handled]).filter((t) => handled.has(t))
      if (narrowed.length === 0) continue
      types = narrowed.length === handled.size ? undefined : narrowed
    }
    const sorted = types?.slice().sort()
    out.set(`${term.streamId ?? "*"}\t${sorted?.join(",") ?? "*"}`, { streamId: term.streamId, eventTypes: sorted })
  }
  return [...out.values()]
}

/**
 * The filter in the builder's words, for messages: `(forStream(a) AND forEventTypes(A, B))`.
 *
 * @internal
 */
export const render = (node: SyncFilterNode): string => {
  switch (node._tag) {
    case "Stream":
      return `forStream(${node.streamId})`
    case "EventTypes":
      return `forEventTypes(${node.eventTypes.join(", ")})`
    case "CurrentScope":
      return "currentScope()"
    case "All":
      return "all()"
    case "And":
      return `(${render(node.left)} AND ${render(node.right)})`
    case "Or":
      return `(${render(node.left)} OR ${render(node.right)})`
  }
}
