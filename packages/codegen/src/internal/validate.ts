/**
 * Checks across definitions: duplicates, unknown event types, awaited perspectives and event types.
 */
import * as Path from "node:path"
import { Perspective } from "@whizbang/core"
import type { Diagnostic } from "../Diagnostic.js"
import type { EventDefinitionInfo, PerspectiveInfo, Position, ReceptorInfo } from "../Definitions.js"

const at = (position: Position, severity: Diagnostic["severity"], code: Diagnostic["code"], message: string): Diagnostic => ({
  severity,
  code,
  message,
  file: position.file,
  line: position.line,
  column: position.column
})

// Relative to the file the diagnostic is in, so messages stay short and copyable.
const where = (from: Position, position: Position) => {
  const relative = Path.relative(Path.dirname(from.file), position.file).split(Path.sep).join("/")
  return `${relative.startsWith(".") ? relative : `./${relative}`}:${position.line}:${position.column}`
}

const duplicates = <A extends Position>(
  items: ReadonlyArray<A>,
  key: (a: A) => string,
  report: (item: A, first: A) => Diagnostic
): Array<Diagnostic> => {
  const first = new Map<string, A>()
  const out: Array<Diagnostic> = []
  for (const item of items) {
    const seen = first.get(key(item))
    if (seen === undefined) first.set(key(item), item)
    else out.push(report(item, seen))
  }
  return out
}

export const validate = (
  events: ReadonlyArray<EventDefinitionInfo>,
  perspectives: ReadonlyArray<PerspectiveInfo>,
  receptors: ReadonlyArray<ReceptorInfo>
): Array<Diagnostic> => {
  const known = new Set(events.map((e) => e.type))
  // An await names a key (`p.name`) or a base name: the latter covers every declared version of it.
  // A duplicate key is reported above; the first definition of a key is the one that counts.
  const firsts = perspectives.filter((p, i) => perspectives.findIndex((q) => q.name === p.name) === i)
  const byName = new Map<string, ReadonlyArray<PerspectiveInfo>>()
  for (const perspective of firsts) byName.set(perspective.name, [perspective])
  for (const perspective of firsts) {
    byName.set(
      perspective.baseName,
      firsts.filter((p) => p.baseName === perspective.baseName)
    )
  }
  const out = [
    ...duplicates(
      events,
      (e) => e.type,
      (e, first) => at(e, "error", "duplicate-event-type", `event type "${e.type}" is already defined at ${where(e, first)}`)
    ),
    ...duplicates(
      perspectives,
      (p) => p.name,
      (p, first) =>
        at(
          p,
          "error",
          "duplicate-perspective-name",
          `perspective name "${p.baseName}"${p.version === 1 ? "" : ` version ${p.version}`} is already defined at ${where(p, first)}; both would write table wh_per_${Perspective.ownRowsName(p.name)}`
        )
    )
  ]
  for (const perspective of perspectives) {
    for (const reference of perspective.references) {
      if (!known.has(reference.type)) {
        out.push(
          at(
            reference,
            "warning",
            "unknown-event-type",
            `perspective "${perspective.name}" handles "${reference.type}", which no scanned EventDefinition.make defines (a typo, or its file is not included)`
          )
        )
      }
    }
  }
  for (const receptor of receptors) {
    const label = receptor.name === undefined ? "a receptor" : `receptor "${receptor.name}"`
    for (const reference of receptor.handles) {
      if (!known.has(reference.type)) {
        out.push(
          at(
            reference,
            "warning",
            "unknown-event-type",
            `${label} handles "${reference.type}", which no scanned EventDefinition.make defines`
          )
        )
      }
    }
    for (const sync of receptor.awaitPerspectiveSync) {
      const versions = byName.get(sync.perspective)
      if (versions === undefined) {
        out.push(
          at(
            sync,
            "error",
            "unknown-perspective",
            `${label} awaits perspective "${sync.perspective}", which no scanned Perspective.make defines`
          )
        )
        continue
      }
      const handled = [...new Set(versions.flatMap((v) => v.eventTypes))]
      for (const reference of sync.eventTypes ?? []) {
        if (!handled.includes(reference.type)) {
          out.push(
            at(
              reference,
              "error",
              "awaited-event-not-handled",
              `${label} awaits perspective "${sync.perspective}" for "${reference.type}", but it does not handle that type (it handles: ${handled.join(", ") || "nothing"})`
            )
          )
        }
      }
    }
  }
  return out
}
