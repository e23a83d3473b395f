// Throw-away projects for tests: copies of fixtures, or files written from strings, in the OS temp directory.
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url))
export const fixture = (name: string) => Path.join(fixtures, name)

const made: Array<string> = []

export const project = (files: Record<string, string>): string => {
  const root = Fs.realpathSync(Fs.mkdtempSync(Path.join(Os.tmpdir(), "whizbang-codegen-")))
  made.push(root)
  for (const [name, content] of Object.entries(files)) {
    Fs.mkdirSync(Path.dirname(Path.join(root, name)), { recursive: true })
    Fs.writeFileSync(Path.join(root, name), content)
  }
  return root
}

export const copyFixture = (name: string): string => {
  const root = project({})
  Fs.cpSync(fixture(name), root, { recursive: true })
  return root
}

export const removeProjects = () => {
  for (const root of made.splice(0)) Fs.rmSync(root, { recursive: true, force: true })
}

export const core = `import { EventDefinition, Perspective, Receptor } from "@whizbang/core"\nimport { Effect, Schema } from "effect"\n`
