// The release rehearsal: what `pnpm version-packages` and `pnpm release` would do, on a throw-away copy and on packed
// tarballs, so a broken release shows up in CI and not on publish day. No network.
import { execFileSync } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Packed, packAll, publicPackages, tarballFiles, tarballManifest, workspacePackages } from "./support/pack.js"
import { workspaceRoot } from "./support/readmeBlocks.js"

const bumps = ["patch", "minor", "major"] as const
type Bump = (typeof bumps)[number]

const bumpVersion = (version: string, bump: Bump) => {
  const [major, minor, patch] = version.split(".").map(Number) as [number, number, number]
  return bump === "major" ? `${major + 1}.0.0` : bump === "minor" ? `${major}.${minor + 1}.0` : `${major}.${minor}.${patch + 1}`
}

/** The bump each pending changeset asks for, read from its frontmatter. */
const changesetBumps = (dir: string): ReadonlyArray<Bump> =>
  readdirSync(dir)
    .filter((file) => file.endsWith(".md") && file !== "README.md")
    .flatMap((file) => {
      const text = readFileSync(Path.join(dir, file), "utf8")
      const front = /^---\n([\s\S]*?)\n---/.exec(text)?.[1] ?? ""
      return [...front.matchAll(/:\s*(patch|minor|major)\s*$/gm)].map((match) => match[1] as Bump)
    })

describe("release rehearsal: changeset version", () => {
  const copy = mkdtempSync(Path.join(Os.tmpdir(), "whizbang-release-"))
  afterAll(() => rmSync(copy, { recursive: true, force: true }))

  beforeAll(() => {
    // Only what changesets reads: the workspace layout, every manifest and the pending changesets.
    for (const file of ["package.json", "pnpm-workspace.yaml"]) cpSync(Path.join(workspaceRoot, file), Path.join(copy, file))
    cpSync(Path.join(workspaceRoot, ".changeset"), Path.join(copy, ".changeset"), { recursive: true })
    for (const pkg of workspacePackages()) {
      mkdirSync(Path.join(copy, pkg.dir), { recursive: true })
      cpSync(Path.join(workspaceRoot, pkg.dir, "package.json"), Path.join(copy, pkg.dir, "package.json"))
    }
    // One changeset of our own, so the rehearsal has something to release even right after a release.
    writeFileSync(Path.join(copy, ".changeset", "release-rehearsal.md"), "---\n'@whizbang/core': patch\n---\n\nRelease rehearsal.\n")
    symlinkSync(Path.join(workspaceRoot, "node_modules"), Path.join(copy, "node_modules"))
    execFileSync(Path.join(workspaceRoot, "node_modules", ".bin", "changeset"), ["version"], { cwd: copy, encoding: "utf8", stdio: "pipe" })
  })

  it("moves every public package to one version (the fixed group) from the largest pending bump", () => {
    const pending = changesetBumps(Path.join(workspaceRoot, ".changeset"))
    const largest = bumps[Math.max(0, ...pending.map((bump) => bumps.indexOf(bump)))]!
    const current = publicPackages()
      .map((pkg) => pkg.manifest.version)
      .sort()
      .at(-1)!
    const expected = bumpVersion(current, largest)
    const versions = Object.fromEntries(
      publicPackages().map((pkg) => [pkg.manifest.name, JSON.parse(readFileSync(Path.join(copy, pkg.dir, "package.json"), "utf8")).version])
    )
    expect(versions).toEqual(Object.fromEntries(publicPackages().map((pkg) => [pkg.manifest.name, expected])))
  })

  it("writes a changelog for each public package with the new version and the changesets' summaries", () => {
    for (const pkg of publicPackages()) {
      const version = JSON.parse(readFileSync(Path.join(copy, pkg.dir, "package.json"), "utf8")).version
      const changelog = readFileSync(Path.join(copy, pkg.dir, "CHANGELOG.md"), "utf8")
      expect(changelog, pkg.manifest.name).toContain(`## ${version}`)
    }
    expect(readFileSync(Path.join(copy, "packages/core/CHANGELOG.md"), "utf8")).toContain("Release rehearsal.")
  })

  it("leaves private packages (examples, bench, release checks) unversioned and without changelogs", () => {
    const privates = workspacePackages().filter((pkg) => pkg.manifest.private === true)
    expect(privates.length).toBeGreaterThan(0)
    for (const pkg of privates) {
      expect(JSON.parse(readFileSync(Path.join(copy, pkg.dir, "package.json"), "utf8")).version, pkg.manifest.name).toBe(
        pkg.manifest.version
      )
      expect(existsSync(Path.join(copy, pkg.dir, "CHANGELOG.md")), pkg.manifest.name).toBe(false)
    }
  })

  it("consumes the changesets", () => {
    expect(readdirSync(Path.join(copy, ".changeset")).filter((file) => file.endsWith(".md") && file !== "README.md")).toEqual([])
  })
})

describe("release rehearsal: packed tarballs", () => {
  const destination = mkdtempSync(Path.join(Os.tmpdir(), "whizbang-pack-"))
  let packed: ReadonlyArray<Packed> = []
  beforeAll(() => {
    packed = packAll(destination)
  })
  afterAll(() => rmSync(destination, { recursive: true, force: true }))

  it("packs every public package", () => {
    expect(packed.map((p) => p.manifest.name).sort()).toEqual(
      publicPackages()
        .map((p) => p.manifest.name)
        .sort()
    )
    console.log(packed.map((p) => `${p.manifest.name}: ${(p.bytes / 1024).toFixed(1)} kB`).join("\n"))
  })

  it("ships dist (js, d.ts, maps), the sources the maps name, README, LICENSE and package.json, nothing else", () => {
    for (const p of packed) {
      const files = tarballFiles(p.tarball)
      expect(
        files.filter(
          (file) => !/^package\/(package\.json|README\.md|LICENSE|dist\/.+\.(js|d\.ts|js\.map|d\.ts\.map)|src\/.+\.ts)$/.test(file)
        ),
        p.manifest.name
      ).toEqual([])
      for (const required of [
        "package/package.json",
        "package/README.md",
        "package/LICENSE",
        "package/dist/index.js",
        "package/dist/index.d.ts"
      ]) {
        expect(files, p.manifest.name).toContain(required)
      }
      for (const bin of Object.values(p.manifest.bin ?? {})) expect(files, p.manifest.name).toContain(`package/${bin.replace(/^\.\//, "")}`)
    }
  })

  it("ships what every source map names: each `sources` entry is a file in the tarball (or the map carries its content)", () => {
    for (const p of packed) {
      const files = new Set(tarballFiles(p.tarball))
      const maps = [...files].filter((file) => file.endsWith(".map"))
      expect(maps.length, p.manifest.name).toBeGreaterThan(0)
      const extracted = mkdtempSync(Path.join(destination, "extracted-"))
      execFileSync("tar", ["-xzf", p.tarball, "-C", extracted])
      const unresolved = maps.flatMap((map) => {
        const { sources, sourcesContent } = JSON.parse(readFileSync(Path.join(extracted, map), "utf8")) as {
          readonly sources: ReadonlyArray<string>
          readonly sourcesContent?: ReadonlyArray<string | null>
        }
        return sources.flatMap((source, i) => {
          const target = Path.posix.join(Path.posix.dirname(map), source)
          return files.has(target) || typeof sourcesContent?.[i] === "string" ? [] : [`${map} -> ${source} (${target})`]
        })
      })
      expect(unresolved, p.manifest.name).toEqual([])
    }
  })

  it("rewrites workspace: ranges to the released versions and keeps peer ranges as written", () => {
    const versions = new Map(publicPackages().map((p) => [p.manifest.name, p.manifest.version]))
    for (const p of packed) {
      const manifest = tarballManifest(p.tarball)
      expect(JSON.stringify(manifest), p.manifest.name).not.toContain("workspace:")
      for (const [name, range] of Object.entries(manifest.dependencies ?? {})) {
        if (versions.has(name)) expect(range, `${p.manifest.name} -> ${name}`).toBe(versions.get(name))
      }
      expect(manifest.peerDependencies, p.manifest.name).toEqual(p.manifest.peerDependencies)
    }
  })

  it("declares effect and @effect/* as peers with a range, never as dependencies, and states engines, license, repository", () => {
    for (const p of packed) {
      const manifest = tarballManifest(p.tarball)
      const effectDeps = Object.keys(manifest.dependencies ?? {}).filter((name) => name === "effect" || name.startsWith("@effect/"))
      expect(effectDeps, p.manifest.name).toEqual([])
      expect(manifest.peerDependencies?.effect, p.manifest.name).toMatch(/^\^4\./)
      expect(manifest.engines, p.manifest.name).toEqual({ node: expect.stringMatching(/^>=\d+/) })
      expect(manifest.license, p.manifest.name).toBe("MIT")
      expect(manifest.repository, p.manifest.name).toMatchObject({ type: "git", directory: p.dir })
    }
  })
})
