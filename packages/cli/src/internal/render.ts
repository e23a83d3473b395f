// Human-readable output: aligned tables, ages, a progress bar. --json bypasses all of it.
import { Effect } from "effect"

/**
 * An aligned table. The last column is never padded. With `width` (the screen's columns) a long last cell is
 * wrapped, never cut: under its column when that leaves it 40 characters or more, else on lines of its own below
 * the row (indented), so the other columns stay aligned.
 */
export const table = (
  headers: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<string>>,
  options: { readonly width?: number | undefined } = {}
): string => {
  if (rows.length === 0) return "  (none)"
  const last = headers.length - 1
  const widths = headers.map((h, i) => Math.max(h.length, ...(i === last ? [] : rows.map((r) => (r[i] ?? "").length))))
  const line = (cells: ReadonlyArray<string>) => "  " + cells.map((c, i) => (i === last ? c : c.padEnd(widths[i]!))).join("  ")
  const column = 2 + widths.slice(0, last).reduce((sum, w) => sum + w + 2, 0)
  const wrapped = (cells: ReadonlyArray<string>) => {
    const text = cells[last] ?? ""
    if (options.width === undefined || column + text.length <= options.width) return line(cells)
    const under = options.width - column >= 40
    const indent = under ? column : 6
    const parts = wrap(text, options.width - indent)
    const head = under ? line([...cells.slice(0, last), parts[0]!]) : line([...cells.slice(0, last), ""]).trimEnd()
    return [head, ...(under ? parts.slice(1) : parts).map((part) => " ".repeat(indent) + part)].join("\n")
  }
  return [line(headers), ...rows.map(wrapped)].join("\n")
}

/** Splits `text` (whitespace collapsed) into lines of at most `width` characters, at spaces where it can. */
export const wrap = (text: string, width: number): ReadonlyArray<string> => {
  const lines: Array<string> = []
  let current = ""
  for (const word of text.replaceAll(/\s+/g, " ").trim().split(" ")) {
    let rest = word
    while (rest.length > 0) {
      if (current === "") {
        // A word longer than the line (a long id, a path) is cut where the line ends.
        current = rest.slice(0, width)
        rest = rest.slice(width)
        if (rest.length > 0) {
          lines.push(current)
          current = ""
        }
      } else if (current.length + 1 + rest.length <= width) {
        current = `${current} ${rest}`
        rest = ""
      } else {
        lines.push(current)
        current = ""
      }
    }
  }
  if (current !== "" || lines.length === 0) lines.push(current)
  return lines
}

export const age = (seconds: number | null): string => {
  if (seconds === null) return "-"
  if (seconds < 60) return `${seconds.toFixed(1)}s`
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${Math.floor(seconds % 60)}s`
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`
  return `${Math.floor(seconds / 86_400)}d ${Math.floor((seconds % 86_400) / 3600)}h`
}

export const count = (n: number): string => n.toLocaleString("en-US")

export const truncate = (text: string | null, max = 60): string => {
  if (text === null) return "-"
  const flat = text.replaceAll(/\s+/g, " ")
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`
}

export const short = (id: string | null): string => (id === null ? "-" : id)

/** `[########------] 42%`: a text progress bar of `ratio` (0..1). */
export const bar = (ratio: number, width = 14): string => {
  const r = Math.max(0, Math.min(1, ratio))
  const filled = Math.round(r * width)
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${Math.floor(r * 100)}%`
}

/** Progress on stderr: redrawn in place on a terminal, one line per update otherwise; silent with --json. */
export const progress =
  (label: string, json: boolean) =>
  ({ done, total }: { readonly done: number; readonly total: number }) =>
    Effect.sync(() => {
      if (json) return
      const width = 30
      const ratio = total === 0 ? 1 : Math.min(1, done / total)
      const filled = Math.round(ratio * width)
      const bar = `${label} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${Math.round(ratio * 100)}% ${count(done)}/${count(total)} streams`
      if (process.stderr.isTTY) process.stderr.write(`\r${bar}${done >= total ? "\n" : ""}`)
      else process.stderr.write(`${bar}\n`)
    })
