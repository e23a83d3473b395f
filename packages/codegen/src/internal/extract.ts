/**
 * Turns whizbang `make` calls into definition records, reporting what cannot be read statically instead of
 * guessing. Events are extracted first, then perspectives (whose handler keys may be `[SomeEvent.type]`),
 * then receptors (whose `awaitPerspectiveSync` may name a perspective const).
 */
import { Perspective } from "@whizbang/core"
import type TS from "typescript"
import { ts } from "./compiler.js"
import type * as Diagnostic from "../Diagnostic.js"
import type { AwaitInfo, EventDefinitionInfo, PerspectiveInfo, Position, ReceptorInfo, Reference } from "../Definitions.js"
import { declarationOf, excerpt, exportNameOf, positionOf, property, staticNumber, staticString, topLevelConst, valueOf } from "./syntax.js"

export interface Context {
  readonly checker: TS.TypeChecker
  readonly report: (node: TS.Node, severity: Diagnostic.Severity, code: Diagnostic.Code, message: string) => void
  readonly reportAt: (position: Position, severity: Diagnostic.Severity, code: Diagnostic.Code, message: string) => void
  readonly events: Map<TS.Declaration, EventDefinitionInfo>
  readonly perspectives: Map<TS.Declaration, PerspectiveInfo>
}

// The same rule as EventRegistry: 1-200 characters, no control characters, no surrounding spaces.
// eslint-disable-next-line no-control-regex
const isValidEventType = (type: string) =>
  type.length >= 1 && type.length <= 200 && type.trim() === type && !/[\u0000-\u001f\u007f]/.test(type)

const dynamic = (context: Context, node: TS.Node, message: string) => context.report(node, "error", "dynamic-definition", message)

const importable = (context: Context, call: TS.CallExpression, what: string): string | undefined => {
  const declaration = topLevelConst(call)
  if (declaration === undefined) {
    context.report(call, "error", "not-importable", `${what} must be assigned to a top-level const so the generated module can import it`)
    return undefined
  }
  const exportName = exportNameOf(context.checker, declaration)
  if (exportName === undefined) {
    context.report(
      declaration,
      "error",
      "not-importable",
      `${what} (const ${declaration.name.getText()}) is not exported; export it so the generated module can import it`
    )
  }
  return exportName
}

/** `SomeEvent.type`, `SomeEvent` (a definition), `"Literal"` or a const string: the event type it names. */
export const eventTypeOf = (context: Context, expression: TS.Expression): string | undefined => {
  const literal = staticString(context.checker, expression)
  if (literal !== undefined) return literal
  if (ts.isPropertyAccessExpression(expression) && expression.name.text === "type") {
    const declaration = declarationOf(context.checker, expression.expression)
    return declaration === undefined ? undefined : context.events.get(declaration)?.type
  }
  const declaration = declarationOf(context.checker, expression)
  return declaration === undefined ? undefined : context.events.get(declaration)?.type
}

const eventTypeList = (context: Context, member: TS.ObjectLiteralElementLike, what: string): ReadonlyArray<Reference> | undefined => {
  const list = valueOf(member)
  if (list === undefined || !ts.isArrayLiteralExpression(list)) {
    dynamic(context, member, `${what} must be an array literal of event types (strings or SomeEvent.type)`)
    return undefined
  }
  const references: Array<Reference> = []
  for (const element of list.elements) {
    const type = ts.isSpreadElement(element) ? undefined : eventTypeOf(context, element)
    if (type === undefined) {
      dynamic(
        context,
        element,
        `cannot resolve ${excerpt(element)} in ${what} to an event type: use a string literal or SomeEvent.type of an event in the scanned files`
      )
    } else references.push({ type, ...positionOf(element) })
  }
  return references
}

export const extractEvent = (context: Context, call: TS.CallExpression): EventDefinitionInfo | undefined => {
  const [typeArgument, options] = call.arguments
  const type = typeArgument === undefined ? undefined : staticString(context.checker, typeArgument)
  if (type === undefined) {
    dynamic(
      context,
      typeArgument ?? call,
      "EventDefinition.make needs its event type as a string literal; a type computed at run time cannot be scanned"
    )
    return undefined
  }
  if (!isValidEventType(type)) {
    context.report(
      typeArgument!,
      "error",
      "invalid-event-type",
      `event type ${JSON.stringify(type)} must be 1-200 characters with no control characters and no surrounding spaces`
    )
  }
  if (options === undefined || !ts.isObjectLiteralExpression(options)) {
    dynamic(context, options ?? call, `the options of event "${type}" must be an object literal with payload and streamId`)
  } else if (property(options, "streamId") === undefined) {
    const spread = options.properties.find(ts.isSpreadAssignment)
    if (spread !== undefined)
      dynamic(context, spread, `a spread in the options of event "${type}" hides whether it has a streamId; write streamId out`)
    else
      context.report(
        typeArgument!,
        "error",
        "missing-stream-id",
        `event "${type}" has no streamId: add streamId: (payload) => payload.<id> so work can be routed to its stream`
      )
  }
  return { type, exportName: importable(context, call, `event "${type}"`), ...positionOf(call) }
}

const handlerKey = (context: Context, name: TS.PropertyName): string | undefined => {
  if (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name) || ts.isNoSubstitutionTemplateLiteral(name))
    return name.text
  return ts.isComputedPropertyName(name) ? eventTypeOf(context, name.expression) : undefined
}

/** The definitions of a perspective's `events` that resolve to scanned events; the others are left to the type checker. */
const definitionList = (context: Context, member: TS.ObjectLiteralElementLike, what: string): ReadonlyArray<Reference> => {
  const list = valueOf(member)
  if (list === undefined || !ts.isArrayLiteralExpression(list)) {
    dynamic(context, member, `${what} must be an array literal of event definitions`)
    return []
  }
  return list.elements.flatMap((element) => {
    const type = ts.isSpreadElement(element) ? undefined : eventTypeOf(context, element)
    return type === undefined ? [] : [{ type, ...positionOf(element) }]
  })
}

/** The declared `version`: 1 when absent; a literal (or const) whole number from 1 to `Perspective.maxVersion`. */
const perspectiveVersion = (context: Context, options: TS.ObjectLiteralExpression, name: string): number => {
  const member = property(options, "version")
  if (member === undefined) return 1
  const value = valueOf(member)
  const version = value === undefined ? undefined : staticNumber(context.checker, value)
  if (version === undefined) {
    dynamic(context, member, `the version of perspective "${name}" must be a number literal (or a const initialised with one)`)
    return 1
  }
  if (!Number.isInteger(version) || version < 1 || version > Perspective.maxVersion) {
    context.report(
      value!,
      "error",
      "invalid-perspective-version",
      `the version of perspective "${name}" must be a whole number from 1 to ${Perspective.maxVersion}, got ${version}`
    )
    return 1
  }
  return version
}

export const extractPerspective = (context: Context, call: TS.CallExpression): PerspectiveInfo | undefined => {
  const options = call.arguments[0]
  if (options === undefined || !ts.isObjectLiteralExpression(options)) {
    dynamic(context, options ?? call, "Perspective.make options must be an object literal with name, events, model, initial and apply")
    return undefined
  }
  const spread = options.properties.find(ts.isSpreadAssignment)
  if (spread !== undefined) {
    dynamic(
      context,
      spread,
      `a spread of ${excerpt(spread.expression)} in Perspective.make options cannot be read statically; write name, events and apply out`
    )
    return undefined
  }
  const nameMember = property(options, "name")
  const nameValue = nameMember === undefined ? undefined : valueOf(nameMember)
  const name = nameValue === undefined ? undefined : staticString(context.checker, nameValue)
  if (name === undefined) {
    dynamic(
      context,
      nameMember ?? options,
      "the perspective name must be a string literal (or a const initialised with one); a name computed at run time cannot be scanned"
    )
    return undefined
  }
  if (!Perspective.isValidBaseName(name)) {
    const suggestion = Perspective.suggestName(name)
    const versioned = Perspective.isValidName(name) ? ` (a "__v<N>" suffix is how keys name versions; give version instead)` : ""
    const hint = versioned !== "" ? versioned : suggestion === undefined ? "" : ` (did you mean "${suggestion}"?)`
    context.report(
      nameValue!,
      "error",
      "invalid-perspective-name",
      `perspective name ${JSON.stringify(name)} must match /^[a-z][a-z0-9_]{0,47}$/${hint}`
    )
  }
  const version = perspectiveVersion(context, options, name)
  const applyMember = property(options, "apply")
  const apply = applyMember === undefined ? undefined : valueOf(applyMember)
  if (apply === undefined || !ts.isObjectLiteralExpression(apply)) {
    dynamic(context, applyMember ?? options, `the apply of perspective "${name}" must be an object literal of handlers keyed by event type`)
    return undefined
  }
  const handlers: Array<Reference> = []
  let unresolved = false
  for (const member of apply.properties) {
    const key = ts.isSpreadAssignment(member) || member.name === undefined ? undefined : handlerKey(context, member.name)
    if (ts.isSpreadAssignment(member)) {
      unresolved = true
      dynamic(
        context,
        member,
        `a spread of ${excerpt(member.expression)} in the apply of perspective "${name}" cannot be read statically; write each handler out`
      )
    } else if (key === undefined) {
      unresolved = true
      dynamic(
        context,
        member.name ?? member,
        `cannot resolve the handler key ${excerpt(member.name ?? member)} of perspective "${name}": use an event type literal or [SomeEvent.type] of an event in the scanned files`
      )
    } else handlers.push({ type: key, ...positionOf(member.name!) })
  }
  // The type checker already holds `apply` to exactly the listed definitions; the scan re-checks what it can
  // resolve (a cast or plain JavaScript gets past the types). A definition from outside the scanned files is
  // known only by its handler key, so the routed types are both lists.
  const listMember = property(options, "events")
  const listed = listMember === undefined ? [] : definitionList(context, listMember, `the events of perspective "${name}"`)
  for (const reference of unresolved ? [] : listed) {
    if (!handlers.some((h) => h.type === reference.type)) {
      context.reportAt(
        reference,
        "error",
        "missing-handler",
        `perspective "${name}" lists "${reference.type}" in events but has no apply handler for it`
      )
    }
  }
  const eventTypes = [...new Set([...listed, ...handlers].map((r) => r.type))]
  const key = Perspective.keyOf(name, version)
  return {
    name: key,
    baseName: name,
    version,
    exportName: importable(context, call, `perspective "${key}"`),
    eventTypes,
    references: [...handlers, ...listed],
    ...positionOf(call)
  }
}

const perspectiveNameOf = (context: Context, expression: TS.Expression): string | undefined => {
  const literal = staticString(context.checker, expression)
  if (literal !== undefined) return literal
  const target = ts.isPropertyAccessExpression(expression) && expression.name.text === "name" ? expression.expression : expression
  const declaration = declarationOf(context.checker, target)
  return declaration === undefined ? undefined : context.perspectives.get(declaration)?.name
}

export const extractReceptor = (context: Context, call: TS.CallExpression): ReceptorInfo | undefined => {
  const options = call.arguments[0]
  if (options === undefined || !ts.isObjectLiteralExpression(options)) {
    dynamic(context, options ?? call, "Receptor.make options must be an object literal")
    return undefined
  }
  const nameMember = property(options, "name")
  const nameValue = nameMember === undefined ? undefined : valueOf(nameMember)
  const name = nameValue === undefined ? undefined : staticString(context.checker, nameValue)
  const label = name === undefined ? "receptor" : `receptor "${name}"`
  // Tolerant on purpose: `handles` only feeds warnings, so entries that cannot be resolved are skipped.
  const handlesValue = ((m) => (m === undefined ? undefined : valueOf(m)))(property(options, "handles"))
  const handles: Array<Reference> = []
  if (handlesValue !== undefined && ts.isArrayLiteralExpression(handlesValue)) {
    for (const element of handlesValue.elements) {
      const type = ts.isSpreadElement(element) ? undefined : eventTypeOf(context, element)
      if (type !== undefined) handles.push({ type, ...positionOf(element) })
    }
  }
  const awaitMember = property(options, "awaitPerspectiveSync")
  const awaits: Array<AwaitInfo> = []
  if (awaitMember === undefined) {
    const spread = options.properties.find(ts.isSpreadAssignment)
    if (spread !== undefined) {
      context.report(
        spread,
        "warning",
        "dynamic-definition",
        `a spread in the options of ${label} may hide awaitPerspectiveSync declarations; they are not tracked`
      )
    }
  } else {
    const list = valueOf(awaitMember)
    if (list === undefined || !ts.isArrayLiteralExpression(list)) {
      dynamic(context, awaitMember, `the awaitPerspectiveSync of ${label} must be an array literal of { perspective, eventTypes? }`)
    } else {
      for (const element of list.elements) {
        if (!ts.isObjectLiteralExpression(element) || element.properties.some(ts.isSpreadAssignment)) {
          dynamic(context, element, `an awaitPerspectiveSync entry of ${label} must be an object literal without spreads`)
          continue
        }
        const perspectiveMember = property(element, "perspective")
        const perspectiveValue = perspectiveMember === undefined ? undefined : valueOf(perspectiveMember)
        const perspective = perspectiveValue === undefined ? undefined : perspectiveNameOf(context, perspectiveValue)
        if (perspective === undefined) {
          dynamic(
            context,
            perspectiveMember ?? element,
            `cannot resolve the perspective awaited by ${label}: use its name as a string literal or a perspective const from the scanned files`
          )
          continue
        }
        const typesMember = property(element, "eventTypes")
        const eventTypes = typesMember === undefined ? undefined : eventTypeList(context, typesMember, `the awaited eventTypes of ${label}`)
        awaits.push({ perspective, eventTypes, ...positionOf(perspectiveValue!) })
      }
    }
  }
  return { name, handles, awaitPerspectiveSync: awaits, ...positionOf(call) }
}
