// The plugin's hooks called directly, the way Vite (and vitest's Vite server) calls them.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { EventEmitter } from "node:events"
import * as Fs from "node:fs"
import { createServer, type ResolvedConfig, type ViteDevServer } from "vite"
import { whizbangCodegen } from "../src/VitePlugin.js"
import { copyFixture, removeProjects } from "./project.js"

afterAll(removeProjects)

type Hook = (this: unknown, ...args: Array<unknown>) => unknown
const hook = (plugin: ReturnType<typeof whizbangCodegen>, name: "configResolved" | "buildStart" | "configureServer") =>
  plugin[name] as unknown as Hook

const setup = (fixtureName: string, command: "build" | "serve", options: Parameters<typeof whizbangCodegen>[0] = {}) => {
  const root = copyFixture(fixtureName)
  const logged: Array<string> = []
  const warnings: Array<string> = []
  const errors: Array<string> = []
  const plugin = whizbangCodegen(options)
  const logger = { info: (m: string) => logged.push(m), warn: (m: string) => logged.push(m) }
  hook(plugin, "configResolved").call(undefined, { root, command, logger } as unknown as ResolvedConfig)
  const context = {
    warn: (m: string) => warnings.push(m),
    error: (m: string) => {
      errors.push(m)
      throw new Error(m)
    }
  }
  const buildStart = () => hook(plugin, "buildStart").call(context, {})
  return { root, plugin, logged, warnings, errors, buildStart, out: `${root}/src/whizbang.generated.ts` }
}

describe("whizbangCodegen", () => {
  it("generates at buildStart and leaves an unchanged file untouched", () => {
    const { buildStart, logged, out } = setup("valid", "serve")
    const committed = Fs.readFileSync(out, "utf8")
    Fs.rmSync(out)
    buildStart()
    expect(Fs.readFileSync(out, "utf8")).toBe(committed)
    expect(logged).toEqual(["[whizbang-codegen] wrote src/whizbang.generated.ts"])
    const past = new Date("2020-01-01T00:00:00Z")
    Fs.utimesSync(out, past, past)
    buildStart()
    expect(Fs.statSync(out).mtimeMs).toBe(past.getTime())
    expect(logged).toHaveLength(1)
  })

  it("regenerates when the dev server's watcher reports a scanned file, and ignores other files", () => {
    const { root, plugin, buildStart, logged, out } = setup("valid", "serve")
    buildStart()
    const watcher = Object.assign(new EventEmitter(), {
      added: [] as Array<unknown>,
      add(paths: unknown) {
        this.added.push(paths)
      }
    })
    hook(plugin, "configureServer").call(undefined, { watcher } as unknown as ViteDevServer)
    expect(watcher.added).toEqual([[`${root}/src`]])
    Fs.appendFileSync(
      `${root}/src/events.ts`,
      `\nexport const Refunded = EventDefinition.make("Refunded", { payload: Schema.String, streamId: (s) => s })\n`
    )
    watcher.emit("change", `${root}/README.md`)
    watcher.emit("change", out)
    expect(Fs.readFileSync(out, "utf8")).not.toContain("Refunded")
    watcher.emit("change", `${root}/src/events.ts`)
    expect(Fs.readFileSync(out, "utf8")).toContain(`"Refunded": Refunded.streamId`)
    Fs.writeFileSync(
      `${root}/src/broken.ts`,
      `import { Perspective } from "@whizbang/core"\nexport const p = Perspective.make({ name: "BadName", apply: {} })\n`
    )
    watcher.emit("add", `${root}/src/broken.ts`)
    expect(logged.slice(-2)).toEqual([
      `src/broken.ts:2:43 - error invalid-perspective-name: perspective name "BadName" must match /^[a-z][a-z0-9_]{0,47}$/ (did you mean "bad_name"?)`,
      "[whizbang-codegen] 1 error, src/whizbang.generated.ts not generated"
    ])
  })

  it("fails a build on error diagnostics but only warns in dev", () => {
    const build = setup("broken", "build")
    expect(build.buildStart).toThrow("15 errors, src/whizbang.generated.ts not generated")
    expect(build.warnings).toHaveLength(15)
    expect(build.warnings[0]).toMatch(/^src\/events\.ts:9:31 - error duplicate-event-type/)
    const dev = setup("broken", "serve")
    dev.buildStart()
    expect(dev.errors).toEqual([])
    expect(dev.warnings.at(-1)).toBe("[whizbang-codegen] 15 errors, src/whizbang.generated.ts not generated")
    const strict = setup("broken", "serve", { failOnError: true })
    expect(strict.buildStart).toThrow("15 errors")
  })

  it("takes config keys as options", () => {
    const { buildStart, root } = setup("valid", "build", { out: "generated/registry.ts", drizzle: false, importExtension: ".ts" })
    buildStart()
    const source = Fs.readFileSync(`${root}/generated/registry.ts`, "utf8")
    expect(source).toContain(`import { ItemAdded, OrderPaid, OrderPlaced } from "../src/events.ts"`)
    expect(source).not.toContain("drizzle-orm")
  })

  it("runs in a real Vite server, as vitest creates one: buildStart generates the module", async () => {
    const root = copyFixture("valid")
    const out = `${root}/src/whizbang.generated.ts`
    const committed = Fs.readFileSync(out, "utf8")
    Fs.rmSync(out)
    const server = await createServer({
      root,
      configFile: false,
      logLevel: "silent",
      plugins: [whizbangCodegen()],
      server: { middlewareMode: true, watch: null }
    })
    try {
      expect(Fs.readFileSync(out, "utf8")).toBe(committed)
    } finally {
      await server.close()
    }
  })
})
