// The main entry never reaches drizzle-orm (an app type-checks and runs without it installed); the drizzle tables
// and runner are the opt-in `@whizbang/postgres/drizzle` entry, and the internal entry (Whizbang's own packages)
// does not reach them either. Follows every import and re-export (type-only ones too: they end up in the .d.ts)
// from each entry through the package's own modules.
import { readFileSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const src = fileURLToPath(new URL("../src/", import.meta.url))
const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  readonly exports: Record<string, { readonly default: string } | string | null>
  readonly dependencies: Record<string, string>
  readonly peerDependencies: Record<string, string>
  readonly peerDependenciesMeta: Record<string, { readonly optional?: boolean }>
}

const specifiers = (file: string) =>
  [...readFileSync(file, "utf8").matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g)].map((match) => match[1]!)

/** Every package outside this one that `entry` reaches, with the chain of modules that reaches it first. */
const reached = (entry: string): Map<string, ReadonlyArray<string>> => {
  const packages = new Map<string, ReadonlyArray<string>>()
  const seen = new Set<string>()
  const visit = (file: string, chain: ReadonlyArray<string>) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const specifier of specifiers(file)) {
      if (specifier.startsWith(".")) {
        visit(Path.resolve(Path.dirname(file), specifier.replace(/\.js$/, ".ts")), [...chain, Path.relative(src, file)])
      } else if (!packages.has(specifier)) {
        packages.set(specifier, [...chain, Path.relative(src, file)])
      }
    }
  }
  visit(Path.join(src, entry), [])
  return packages
}

const entryFile = (subpath: string) => {
  const target = manifest.exports[subpath]
  const file = typeof target === "string" ? target : target!.default
  return Path.basename(file).replace(/\.js$/, ".ts")
}

describe("package entries", () => {
  it("the main entry reaches no drizzle-orm module", () => {
    const drizzle = [...reached(entryFile("."))].filter(([name]) => name.startsWith("drizzle-orm"))
    expect(drizzle.map(([name, chain]) => `${chain.join(" -> ")} -> ${name}`)).toEqual([])
  })

  it("the internal entry (for Whizbang's own packages) reaches no drizzle-orm module; the internal folder stays closed", () => {
    const drizzle = [...reached(entryFile("./internal"))].filter(([name]) => name.startsWith("drizzle-orm"))
    expect(drizzle.map(([name, chain]) => `${chain.join(" -> ")} -> ${name}`)).toEqual([])
    expect(manifest.exports["./internal/*"]).toBeNull()
  })

  it("the drizzle entry holds the tables and the runner, and drizzle-orm is an optional peer", () => {
    expect([...reached(entryFile("./drizzle")).keys()]).toEqual(
      expect.arrayContaining(["drizzle-orm/node-postgres", "drizzle-orm/pg-core"])
    )
    expect(manifest.dependencies["drizzle-orm"]).toBeUndefined()
    expect(manifest.peerDependencies["drizzle-orm"]).toBeDefined()
    expect(manifest.peerDependenciesMeta["drizzle-orm"]?.optional).toBe(true)
  })
})
