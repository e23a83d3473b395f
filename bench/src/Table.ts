/** Plain-text and Markdown tables for the console and the results file. */

export interface Table {
  readonly title: string
  readonly head: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
  readonly notes?: ReadonlyArray<string>
}

export const text = (t: Table) => {
  const widths = t.head.map((h, i) => Math.max(h.length, ...t.rows.map((r) => (r[i] ?? "").length)))
  const left = t.head.length === 2
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === 0 || left ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [
    `\n== ${t.title}`,
    line(t.head),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...t.rows.map(line),
    ...(t.notes ?? []).map((n) => `   ${n}`)
  ].join("\n")
}

export const markdown = (t: Table) =>
  [
    `### ${t.title}`,
    "",
    `| ${t.head.join(" | ")} |`,
    `|${t.head.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`,
    ...t.rows.map((r) => `| ${r.join(" | ")} |`),
    "",
    ...(t.notes ?? []).map((n) => `- ${n}`),
    ""
  ].join("\n")
