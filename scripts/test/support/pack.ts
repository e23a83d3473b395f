// Packs every public workspace package exactly as `pnpm publish` would (workspace: ranges rewritten, `files` applied),
// and reads a tarball's file list and manifest back.
import { execFileSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync } from "node:fs"
import * as Path from "node:path"
import { workspaceRoot } from "./readmeBlocks.js"

export interface Manifest {
  readonly name: string
  readonly version: string
  readonly private?: boolean
  readonly bin?: Record<string, string>
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
  readonly [key: string]: unknown
}

export interface WorkspacePackage {
  readonly dir: string
  readonly manifest: Manifest
}

export const workspacePackages = (): ReadonlyArray<WorkspacePackage> =>
  [
    ...["packages", "examples"].flatMap((group) => readdirSync(Path.join(workspaceRoot, group)).map((name) => Path.join(group, name))),
    "bench",
    "scripts"
  ]
    .filter((dir) => {
      try {
        readFileSync(Path.join(workspaceRoot, dir, "package.json"))
        return true
      } catch {
        return false
      }
    })
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(Path.join(workspaceRoot, dir, "package.json"), "utf8")) as Manifest }))

export const publicPackages = () => workspacePackages().filter((pkg) => pkg.manifest.private !== true)

export interface Packed extends WorkspacePackage {
  readonly tarball: string
  readonly bytes: number
}

/** `pnpm pack` of every public package into `destination` (the packages must be built). */
export const packAll = (destination: string): ReadonlyArray<Packed> => {
  mkdirSync(destination, { recursive: true })
  return publicPackages().map((pkg) => {
    const output = execFileSync("pnpm", ["pack", "--json", "--pack-destination", destination], {
      cwd: Path.join(workspaceRoot, pkg.dir),
      encoding: "utf8"
    })
    const tarball = Path.resolve(destination, (JSON.parse(output) as { filename: string }).filename)
    return { ...pkg, tarball, bytes: readFileSync(tarball).byteLength }
  })
}

export const tarballFiles = (tarball: string): ReadonlyArray<string> =>
  execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line !== "")
    .sort()

export const tarballManifest = (tarball: string): Manifest =>
  JSON.parse(execFileSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" })) as Manifest
