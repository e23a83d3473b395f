import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Receptor } from "@whizbang/core"
import * as FireAt from "../src/FireAt.js"

const handle = () => Effect.void

describe("FireAt", () => {
  it("maps every reference stage onto the dispatcher or a worker stage and mode", () => {
    expect(FireAt.all.map((f) => [f, FireAt.placement(f)])).toEqual([
      ["LocalImmediateInline", { _tag: "Dispatcher", afterAppend: false, forked: false }],
      ["PostDistributeInline", { _tag: "Dispatcher", afterAppend: true, forked: false }],
      ["PostDistributeAsync", { _tag: "Dispatcher", afterAppend: true, forked: true }],
      ["PostPerspectiveInline", { _tag: "Worker", stage: "PostPerspective", mode: "inline" }],
      ["PostPerspectiveAsync", { _tag: "Worker", stage: "PostPerspective", mode: "detached" }],
      ["PostAllPerspectivesInline", { _tag: "Worker", stage: "PostAllPerspectives", mode: "inline" }],
      ["PostAllPerspectivesAsync", { _tag: "Worker", stage: "PostAllPerspectives", mode: "detached" }],
      ["PostLifecycleInline", { _tag: "Worker", stage: "PostLifecycle", mode: "inline" }],
      ["PostLifecycleAsync", { _tag: "Worker", stage: "PostLifecycle", mode: "detached" }]
    ])
  })

  it.effect("receptor sets the worker stage and mode; dispatcher stages set neither", () =>
    Effect.gen(function* () {
      const worker = FireAt.receptor("PostAllPerspectivesAsync", { name: "r", handles: ["A"], handle })
      expect([worker.stage, worker.mode]).toEqual(["PostAllPerspectives", "detached"])
      const local = FireAt.receptor("LocalImmediateInline", { name: "r", handles: ["A"], handle })
      expect(local.stage).toBeUndefined()
    })
  )

  it.effect("an inline worker stage that would wait on the worker running it is a typed error, not a deadlock", () =>
    Effect.gen(function* () {
      const sync = [{ perspective: "orders" }]
      for (const fireAt of ["PostPerspectiveInline", "PostAllPerspectivesInline", "PostLifecycleInline"] as const) {
        const error = yield* Effect.flip(
          Receptor.validate(FireAt.receptor(fireAt, { name: "r", handles: ["A"], awaitPerspectiveSync: sync, handle }))
        )
        expect(error._tag).toBe("InvalidReceptor")
        expect(error.message).toContain("deadlock")
      }
      const ok = yield* Receptor.validate(
        FireAt.receptor("PostPerspectiveAsync", { name: "r", handles: ["A"], awaitPerspectiveSync: sync, handle })
      )
      expect(ok.awaitPerspectiveSync).toEqual(sync)
      yield* Receptor.validate(FireAt.receptor("PostDistributeInline", { name: "r", handles: ["A"], awaitPerspectiveSync: sync, handle }))
    })
  )
})
