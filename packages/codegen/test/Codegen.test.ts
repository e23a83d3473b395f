import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Codegen from "../src/Codegen.js"
import * as CodegenConfig from "../src/CodegenConfig.js"
import { copyFixture, core, fixture, project, removeProjects } from "./project.js"

afterAll(removeProjects)

const load = (cwd: string, overrides?: CodegenConfig.ConfigFile, configFile?: string) => CodegenConfig.load({ cwd, overrides, configFile })

describe("Codegen", () => {
  it.effect("writes once, then leaves an unchanged file untouched (same mtime)", () =>
    Effect.gen(function* () {
      const root = copyFixture("valid")
      const config = yield* load(root)
      Fs.rmSync(config.outFile)
      const first = yield* Codegen.generate(config)
      expect(first.status).toBe("written")
      expect(Fs.readFileSync(config.outFile, "utf8")).toBe(Fs.readFileSync(`${fixture("valid")}/src/whizbang.generated.ts`, "utf8"))
      const past = new Date("2020-01-01T00:00:00Z")
      Fs.utimesSync(config.outFile, past, past)
      const second = yield* Codegen.generate(config, { previous: first.scan })
      expect(second.status).toBe("unchanged")
      expect(Fs.statSync(config.outFile).mtimeMs).toBe(past.getTime())
      expect((yield* Codegen.check(config)).status).toBe("up-to-date")
    })
  )

  it.effect("check reports a missing or stale file and writes nothing", () =>
    Effect.gen(function* () {
      const root = copyFixture("valid")
      const config = yield* load(root)
      Fs.appendFileSync(
        `${root}/src/events.ts`,
        `\nexport const Refunded = EventDefinition.make("Refunded", { payload: Schema.String, streamId: (s) => s })\n`
      )
      const before = Fs.readFileSync(config.outFile, "utf8")
      const stale = yield* Codegen.check(config)
      expect(stale.status).toBe("stale")
      expect(Codegen.failed(stale)).toBe(true)
      expect(stale.content).toContain(`"Refunded": Refunded.streamId`)
      expect(Fs.readFileSync(config.outFile, "utf8")).toBe(before)
      Fs.rmSync(config.outFile)
      expect((yield* Codegen.check(config)).status).toBe("stale")
      expect(Fs.existsSync(config.outFile)).toBe(false)
    })
  )

  it.effect("does not write when there are errors", () =>
    Effect.gen(function* () {
      const root = copyFixture("broken")
      const report = yield* Codegen.generate(yield* load(root))
      expect(report.status).toBe("not-generated")
      expect(report.content).toBeUndefined()
      expect(report.diagnostics.filter((d) => d.severity === "error")).toHaveLength(15)
      expect(Fs.existsSync(`${root}/src/whizbang.generated.ts`)).toBe(false)
    })
  )

  it.effect("renders in memory with write: false", () =>
    Effect.gen(function* () {
      const root = copyFixture("warnings")
      const report = yield* Codegen.generate(yield* load(root), { write: false })
      expect(report.status).toBe("written")
      expect(report.content).toContain(`export const perspectiveNames = ["accounts"] as const`)
      expect(Fs.existsSync(report.outFile)).toBe(false)
    })
  )

  it.effect("passes on examples/hello (events only) with an out-of-tree output", () =>
    Effect.gen(function* () {
      const hello = Path.resolve(fixture("valid"), "../../../../../examples/hello")
      const out = Path.join(project({}), "hello.generated.ts")
      const config = yield* load(hello, { include: ["src/**/*.ts"], out })
      expect((yield* Codegen.check(config)).status).toBe("stale")
      const written = yield* Codegen.generate(config)
      expect(written.diagnostics).toEqual([])
      expect(written.scan.events.map((e) => e.type)).toEqual(expect.arrayContaining(["AccountOpened", "MoneyDeposited"]))
      expect((yield* Codegen.check(config)).status).toBe("up-to-date")
    })
  )

  it.effect("passes on examples/orders: routes, perspectives and tables of a whole service", () =>
    Effect.gen(function* () {
      const orders = Path.resolve(fixture("valid"), "../../../../../examples/orders")
      const out = Path.join(project({}), "orders.generated.ts")
      const written = yield* Codegen.generate(yield* load(orders, { include: ["src/**/*.ts"], out }))
      expect(written.diagnostics.filter((d) => d.severity === "error")).toEqual([])
      expect(written.scan.perspectives.map((p) => p.name).sort()).toEqual(["customer_stats", "order_summary"])
      expect(written.content).toContain("whPerOrderSummary")
    })
  )
})

describe("CodegenConfig", () => {
  it.effect("resolves paths against the config file's directory and reads the tsconfig", () =>
    Effect.gen(function* () {
      const root = project({
        "app/whizbang.codegen.json": JSON.stringify({
          include: ["lib/**/*.ts"],
          out: "gen/registry.ts",
          tsconfig: "tsconfig.app.json",
          drizzle: false
        }),
        "app/tsconfig.app.json": JSON.stringify({ compilerOptions: { module: "preserve", moduleResolution: "bundler" } })
      })
      const config = yield* load(root, { importExtension: "" }, "app/whizbang.codegen.json")
      expect(config.root).toBe(`${root}/app`)
      expect(config.include).toEqual(["lib/**/*.ts"])
      expect(config.outFile).toBe(`${root}/app/gen/registry.ts`)
      expect(config.importExtension).toBe("")
      expect(config.drizzle).toBe(false)
      expect(config.compilerOptions?.moduleResolution).toBeDefined()
      expect(CodegenConfig.watchDirectories(config)).toEqual([`${root}/app/lib`])
    })
  )

  it.effect("fails with a typed reason for a missing file, bad JSON, unknown keys and a bad tsconfig", () =>
    Effect.gen(function* () {
      const root = project({
        "bad.json": "{ nope",
        "extra.json": JSON.stringify({ include: ["src/**/*.ts"], output: "x.ts" }),
        "empty.json": JSON.stringify({ include: [] }),
        "ts.json": JSON.stringify({ tsconfig: "broken.json" }),
        "broken.json": '{ "compilerOptions": { "module": 42 } }'
      })
      const reason = (file: string) => Effect.flip(load(root, undefined, file)).pipe(Effect.map((e) => [e.reason, e.message]))
      expect((yield* reason("missing.json"))[0]).toBe("ConfigNotFound")
      expect((yield* reason("bad.json"))[0]).toBe("ConfigInvalid")
      const [extra, message] = yield* reason("extra.json")
      expect(extra).toBe("ConfigInvalid")
      expect(message).toContain(`["output"]`)
      expect((yield* reason("empty.json"))[1]).toContain("include must name at least one glob")
      expect((yield* reason("ts.json"))[0]).toBe("TsconfigInvalid")
    })
  )

  it.effect("uses defaults without a config file", () =>
    Effect.gen(function* () {
      const root = project({ "src/a.ts": core })
      const config = yield* load(root)
      expect([config.include, config.outFile, config.drizzle, config.compilerOptions]).toEqual([
        ["src/**/*.ts"],
        `${root}/src/whizbang.generated.ts`,
        {},
        undefined
      ])
    })
  )
})
