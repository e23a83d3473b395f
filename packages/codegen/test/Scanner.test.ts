import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Diagnostic from "../src/Diagnostic.js"
import * as Scanner from "../src/Scanner.js"
import { core, fixture, project, removeProjects } from "./project.js"

afterAll(removeProjects)

const scan = (root: string, include = ["src/**/*.ts"]) =>
  Scanner.scan({ root, include, ignoreFiles: [`${root}/src/whizbang.generated.ts`] })
const formatted = (root: string, result: Scanner.Result) => result.diagnostics.map((d) => Diagnostic.format(d, root))

describe("Scanner", () => {
  it("finds events, perspectives and receptors in the valid fixture", () => {
    const root = fixture("valid")
    const result = scan(root)
    expect(result.diagnostics).toEqual([])
    expect(result.files.map((f) => f.slice(root.length + 1))).toEqual([
      "src/events.ts",
      "src/perspectives/customerStats.ts",
      "src/perspectives/orderSummary.ts",
      "src/perspectives/orderSummaryV2.ts",
      "src/receptors.ts"
    ])
    expect(result.events.map((e) => [e.type, e.exportName, e.line])).toEqual([
      ["OrderPlaced", "OrderPlaced", 7],
      ["ItemAdded", "ItemAdded", 12],
      // `const paid = EventDefinition.make(PAID, ...)` with `export { paid as OrderPaid }`.
      ["OrderPaid", "OrderPaid", 19]
    ])
    expect(result.perspectives.map((p) => [p.name, p.exportName, p.eventTypes])).toEqual([
      ["customer_stats", "customerStats", ["OrderPlaced", "OrderPaid"]],
      ["order_summary", "orderSummary", ["OrderPlaced", "ItemAdded", "OrderPaid"]],
      ["order_summary__v2", "orderSummaryV2", ["OrderPlaced", "ItemAdded", "OrderPaid"]]
    ])
    expect(result.perspectives.map((p) => [p.baseName, p.version])).toEqual([
      ["customer_stats", 1],
      ["order_summary", 1],
      ["order_summary", 2]
    ])
    const [receptor] = result.receptors
    expect(receptor?.name).toBe("send_confirmation")
    expect(receptor?.handles.map((h) => h.type)).toEqual(["OrderPaid"])
    expect(receptor?.awaitPerspectiveSync.map((a) => [a.perspective, a.eventTypes?.map((r) => r.type)])).toEqual([
      ["order_summary", ["OrderPaid"]],
      ["customer_stats", undefined]
    ])
  })

  it("reports every broken definition with file:line:col", () => {
    const root = fixture("broken")
    expect(formatted(root, scan(root))).toEqual([
      `src/events.ts:9:31 - error duplicate-event-type: event type "Deposited" is already defined at ./events.ts:4:26`,
      `src/events.ts:14:47 - error missing-stream-id: event "Withdrawn" has no streamId: add streamId: (payload) => payload.<id> so work can be routed to its stream`,
      `src/events.ts:19:46 - error dynamic-definition: EventDefinition.make needs its event type as a string literal; a type computed at run time cannot be scanned`,
      `src/events.ts:24:7 - error not-importable: event "Local" (const Local) is not exported; export it so the generated module can import it`,
      `src/events.ts:27:32 - error not-importable: event "Inner" must be assigned to a top-level const so the generated module can import it`,
      `src/perspectives.ts:16:28 - error duplicate-perspective-name: perspective name "balance" is already defined at ./perspectives.ts:8:24; both would write table wh_per_balance__v1`,
      `src/perspectives.ts:29:12 - error dynamic-definition: a spread of shared in the apply of perspective "spread" cannot be read statically; write each handler out`,
      `src/perspectives.ts:33:22 - error dynamic-definition: the perspective name must be a string literal (or a const initialised with one); a name computed at run time cannot be scanned`,
      `src/perspectives.ts:35:47 - error invalid-perspective-name: perspective name "AccountBalance" must match /^[a-z][a-z0-9_]{0,47}$/ (did you mean "account_balance"?)`,
      `src/perspectives.ts:37:63 - error invalid-perspective-version: the version of perspective "zero" must be a whole number from 1 to 9999, got 0`,
      `src/perspectives.ts:40:63 - error dynamic-definition: the version of perspective "dyn" must be a number literal (or a const initialised with one)`,
      `src/perspectives.ts:42:47 - error invalid-perspective-name: perspective name "ledger__v3" must match /^[a-z][a-z0-9_]{0,47}$/ (a "__v<N>" suffix is how keys name versions; give version instead)`,
      `src/perspectives.ts:45:31 - error duplicate-perspective-name: perspective name "balance" version 2 is already defined at ./perspectives.ts:44:26; both would write table wh_per_balance__v2`,
      `src/receptors.ts:10:47 - error awaited-event-not-handled: receptor "audit" awaits perspective "balance" for "Withdrawn", but it does not handle that type (it handles: Deposited)`,
      `src/receptors.ts:11:20 - error unknown-perspective: receptor "audit" awaits perspective "ledger", which no scanned Perspective.make defines`
    ])
  })

  it("reports a handler for an event type nobody defines as a warning only", () => {
    const root = fixture("warnings")
    const result = scan(root)
    expect(formatted(root, result)).toEqual([
      `src/index.ts:13:44 - warning unknown-event-type: perspective "accounts" handles "Closed", which no scanned EventDefinition.make defines (a typo, or its file is not included)`
    ])
    expect(Diagnostic.hasErrors(result.diagnostics)).toBe(false)
    expect(result.perspectives[0]?.eventTypes).toEqual(["Opened", "Closed"])
  })

  it("follows renamed and namespace imports, wrappers and re-exports", () => {
    const root = project({
      "src/events.ts": `import { EventDefinition as ED } from "@whizbang/core"
export const A = ED.make("A", { payload: null as never, streamId: (p: { id: string }) => p.id })`,
      "src/more.ts": `import * as EventDefinition from "@whizbang/core/EventDefinition"
const B = EventDefinition.make("B", { payload: null as never, streamId: (p: { id: string }) => p.id })
export default B`,
      "src/p.ts": `import * as W from "whizbang"
import * as E from "./events.js"
import Bee from "./more.js"
const NAME = "piped"
export const piped = W.Perspective.make({ name: NAME, events: [E.A, Bee], model: null as never, initial: 0, apply: { [E.A.type]: (m) => m, [Bee.type]: (m) => m } }).pipe((x) => x) satisfies unknown`
    })
    const result = scan(root)
    expect(result.diagnostics).toEqual([])
    expect(result.events.map((e) => [e.type, e.exportName])).toEqual([
      ["A", "A"],
      ["B", "default"]
    ])
    expect(result.perspectives.map((p) => [p.name, p.exportName, p.eventTypes])).toEqual([["piped", "piped", ["A", "B"]]])
  })

  it("ignores look-alikes that are not imported from whizbang and type-only imports", () => {
    const root = project({
      "src/a.ts": `import type { EventDefinition } from "@whizbang/core"
const Perspective = { make: (o: unknown) => o }
export const x = Perspective.make({ name: 1 })
export type T = EventDefinition.Any`
    })
    const result = scan(root)
    expect([result.events, result.perspectives, result.diagnostics]).toEqual([[], [], []])
  })

  it("reports a handler key naming an event outside the scanned files as dynamic", () => {
    const root = project({
      "src/p.ts": `${core}import { Elsewhere } from "../other/events.js"
export const p = Perspective.make({ name: "p", events: [Elsewhere], model: null as never, initial: 0, apply: { [Elsewhere.type]: (m) => m } })`,
      "other/events.ts": `${core}export const Elsewhere = EventDefinition.make("Elsewhere", { payload: Schema.String, streamId: (s) => s })`
    })
    expect(formatted(root, scan(root))).toEqual([
      `src/p.ts:4:112 - error dynamic-definition: cannot resolve the handler key [Elsewhere.type] of perspective "p": use an event type literal or [SomeEvent.type] of an event in the scanned files`
    ])
    // Scanning the other directory too resolves it.
    expect(scan(root, ["src/**/*.ts", "other/**/*.ts"]).diagnostics).toEqual([])
  })

  it("checks the listed events against the handlers and receptor declarations it cannot read", () => {
    const root = project({
      "src/a.ts": `${core}export const A = EventDefinition.make("A", { payload: Schema.String, streamId: (s) => s })
export const B = EventDefinition.make("B", { payload: Schema.String, streamId: (s) => s })
export const p = Perspective.make({ name: "p", events: [A, B], model: null as never, initial: 0, apply: { A: (m) => m } })
const syncs = [{ perspective: "p" }]
export const r1 = Receptor.make({ name: "r1", handles: [A], awaitPerspectiveSync: syncs, handle: () => Effect.void })
export const r2 = Receptor.make({ name: "r2", handles: ["A"], awaitPerspectiveSync: [{ perspective: p.name, eventTypes: ["B"] }], handle: () => Effect.void })
const base = { handles: [A], handle: () => Effect.void }
export const r3 = Receptor.make({ ...base, name: "r3" })`
    })
    expect(formatted(root, scan(root))).toEqual([
      `src/a.ts:5:60 - error missing-handler: perspective "p" lists "B" in events but has no apply handler for it`,
      `src/a.ts:7:61 - error dynamic-definition: the awaitPerspectiveSync of receptor "r1" must be an array literal of { perspective, eventTypes? }`,
      `src/a.ts:10:35 - warning dynamic-definition: a spread in the options of receptor "r3" may hide awaitPerspectiveSync declarations; they are not tracked`
    ])
  })
})
