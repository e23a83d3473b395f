/** A hand-rolled SVG: throughput per system (median with min–max whiskers) and latency per option set and rate. */

export interface Bar {
  readonly label: string
  readonly value: number
  readonly min?: number
  readonly max?: number
}

const esc = (s: string) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")

const panel = (x: number, y: number, width: number, title: string, unit: string, bars: ReadonlyArray<Bar>) => {
  const rowH = 22
  const labelW = 190
  const top = 28
  const top_ = Math.max(1, ...bars.map((b) => b.max ?? b.value).filter(Number.isFinite))
  const scale = (v: number) => ((width - labelW - 80) * v) / top_
  const rows = bars.map((b, i) => {
    const yy = y + top + i * rowH
    const w = Number.isFinite(b.value) ? scale(b.value) : 0
    const whisker =
      b.min !== undefined && b.max !== undefined && Number.isFinite(b.min)
        ? `<line x1="${x + labelW + scale(b.min)}" x2="${x + labelW + scale(b.max)}" y1="${yy + 8}" y2="${yy + 8}" stroke="#222" stroke-width="1.5"/>`
        : ""
    const color = b.label.startsWith("whizbang") ? "#2b6cb0" : b.label.startsWith("baseline") ? "#718096" : "#dd6b20"
    return (
      `<text x="${x + labelW - 6}" y="${yy + 12}" text-anchor="end">${esc(b.label)}</text>` +
      `<rect x="${x + labelW}" y="${yy}" width="${w.toFixed(1)}" height="16" fill="${color}"/>${whisker}` +
      `<text x="${x + labelW + w + 6}" y="${yy + 12}">${Number.isFinite(b.value) ? Math.round(b.value * 10) / 10 : "-"} ${esc(unit)}</text>`
    )
  })
  return {
    svg: `<text x="${x}" y="${y + 14}" font-weight="bold">${esc(title)}</text>${rows.join("")}`,
    height: top + bars.length * rowH + 16
  }
}

export const render = (
  panels: ReadonlyArray<{ readonly title: string; readonly unit: string; readonly bars: ReadonlyArray<Bar> }>,
  footer: string
) => {
  const width = 760
  let y = 10
  const parts: Array<string> = []
  for (const p of panels) {
    const drawn = panel(10, y, width, p.title, p.unit, p.bars)
    parts.push(drawn.svg)
    y += drawn.height
  }
  parts.push(`<text x="10" y="${y + 10}" fill="#555">${esc(footer)}</text>`)
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y + 24}" font-family="sans-serif" font-size="12">` +
    `<rect width="100%" height="100%" fill="white"/>${parts.join("")}</svg>\n`
  )
}
