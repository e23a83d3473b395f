// Listening is a Stream: no library module runs an effect from a callback (`Effect.runSync`/`runFork` bridges). pg's
// event emitter meets Effect through `Queue.offerUnsafe`/`Deferred.doneUnsafe` (internal/listenConnection.ts) only.
// The command-line and Vite-plugin entry points of @whizbang/codegen are program edges, not library code paths.
import { readdirSync, readFileSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const packages = fileURLToPath(new URL("../../", import.meta.url))
const edges = new Set(["codegen/src/Cli.ts", "codegen/src/VitePlugin.ts"])

const sources = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    return entry.isDirectory() ? sources(path) : entry.name.endsWith(".ts") ? [path] : []
  })

describe("library code runs no effect from a callback", () => {
  it("no Effect.runSync or Effect.runFork in any package's src outside the codegen entry points", () => {
    const found = readdirSync(packages)
      .flatMap((pkg) => {
        const src = Path.join(packages, pkg, "src")
        try {
          return sources(src)
        } catch {
          return []
        }
      })
      .filter((file) => !edges.has(Path.relative(packages, file)))
      .flatMap((file) =>
        readFileSync(file, "utf8")
          .split("\n")
          .flatMap((line, i) => (/Effect\.run(Sync|Fork)\b/.test(line) ? [`${Path.relative(packages, file)}:${i + 1}`] : []))
      )
    expect(found).toEqual([])
  })
})
