// Human-readable output: aligned tables, ages, a progress bar. --json bypasses all of it.
import { Effect } from "effect"

export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  if (rows.length === 0) return "  (none)"
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => "  " + cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")
  return [line(headers), ...rows.map(line)].join("\n")
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
