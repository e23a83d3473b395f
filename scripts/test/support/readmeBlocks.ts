// The TypeScript blocks of the READMEs, written out as files so `tsc` can check them: the READMEs are what users
// copy, so every block must compile against the packages as published. A block that is deliberately a fragment
// opts out with the line `<!-- readme-check: fragment -->` right above its fence (keep these rare).
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export const workspaceRoot = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../../..")

export const optOutMarker = "<!-- readme-check: fragment -->"

// READMEs whose blocks were written as excerpts before this check existed (names from context, no imports). Their
// errors are shown and the test is skipped; once a README compiles it must leave this list (the test says so), so
// the list only shrinks. Empty it by giving each block its imports and declarations, or marking a true fragment.
export const pending: ReadonlySet<string> = new Set<string>([])

export interface CodeBlock {
  /** The README, relative to the workspace root. */
  readonly readme: string
  /** 1-based line of the block's first code line in the README. */
  readonly line: number
  readonly code: string
  readonly fragment: boolean
}

const readmesIn = (folder: string): ReadonlyArray<string> =>
  readdirSync(Path.join(workspaceRoot, folder))
    .map((name) => `${folder}/${name}/README.md`)
    .filter((file) => {
      try {
        readFileSync(Path.join(workspaceRoot, file))
        return true
      } catch {
        return false
      }
    })
    .sort()

/** The root README, every package README and every example README: the documents a user reads and copies from. */
export const readmeFiles = (): ReadonlyArray<string> => ["README.md", ...readmesIn("packages"), ...readmesIn("examples")]

export const extractBlocks = (readme: string, markdown: string): ReadonlyArray<CodeBlock> => {
  const lines = markdown.split("\n")
  const blocks: Array<CodeBlock> = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*```(ts|typescript)\s*$/.exec(lines[i]!)
    if (open === null) continue
    const end = lines.findIndex((line, j) => j > i && /^\s*```\s*$/.test(line))
    if (end === -1) throw new Error(`${readme}:${i + 1}: a \`\`\`ts block is never closed`)
    let previous = i - 1
    while (previous >= 0 && lines[previous]!.trim() === "") previous--
    blocks.push({
      readme,
      line: i + 2,
      code: lines.slice(i + 1, end).join("\n"),
      fragment: previous >= 0 && lines[previous]!.trim() === optOutMarker
    })
    i = end
  }
  return blocks
}

export interface WrittenBlock extends CodeBlock {
  readonly file: string
}

/**
 * Writes every checked block (of those `select` keeps) as its own module under `dir` (with a `tsconfig.json`), so
 * names do not clash between blocks; returns where each went, to map compiler errors back to README lines.
 */
export const writeBlocks = (
  dir: string,
  compilerOptions: Record<string, unknown>,
  readmes: ReadonlyArray<string> = readmeFiles(),
  select: (block: CodeBlock) => boolean = () => true
): ReadonlyArray<WrittenBlock> => {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const written: Array<WrittenBlock> = []
  for (const readme of readmes) {
    const blocks = extractBlocks(readme, readFileSync(Path.join(workspaceRoot, readme), "utf8")).filter(
      (block) => !block.fragment && select(block)
    )
    blocks.forEach((block, index) => {
      const file = `${readme.replace(/[/.]/g, "_")}_${index + 1}.ts`
      // `export {}` keeps a block without imports a module, so top-level await and local names stay local.
      writeFileSync(Path.join(dir, file), `${block.code}\nexport {}\n`)
      written.push({ ...block, file })
    })
  }
  writeFileSync(
    Path.join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { noEmit: true, types: ["node"], ...compilerOptions }, include: ["*.ts"] }, null, 2)
  )
  return written
}

export interface BlockError {
  readonly readme: string
  readonly line: number
  readonly message: string
}

/** Maps `tsc --pretty false` output (`file.ts(line,col): error TSxxxx: ...`) back to README lines. */
export const blockErrors = (output: string, written: ReadonlyArray<WrittenBlock>): ReadonlyArray<BlockError> =>
  output.split("\n").flatMap((line) => {
    const match = /^(?:.*[\\/])?([^\\/(]+\.ts)\((\d+),\d+\): (error .*)$/.exec(line.trim())
    if (match === null) return []
    const block = written.find((b) => b.file === match[1])
    return block === undefined ? [] : [{ readme: block.readme, line: block.line + Number(match[2]) - 1, message: match[3]! }]
  })

/** The blocks that import `@whizbang/postgres/drizzle`: they need drizzle-orm, which an app installs only for them. */
export const importsDrizzleEntry = (block: CodeBlock): boolean => /from\s+["']@whizbang\/postgres\/drizzle["']/.test(block.code)
