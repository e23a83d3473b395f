// A sparkline as inline SVG: a polyline over the last points, scaled to the largest; no script, no external file.
import { type Html, html } from "./html.js"

const width = 120
const height = 24

export const sparkline = (points: ReadonlyArray<number>, label: string): Html => {
  if (points.length < 2)
    return html`<svg class="spark" width="${width}" height="${height}" role="img" aria-label="${label}: no history yet"></svg>`
  const max = Math.max(...points, 1)
  const step = width / (points.length - 1)
  const coordinates = points.map((p, i) => `${(i * step).toFixed(1)},${(height - 2 - (p / max) * (height - 4)).toFixed(1)}`).join(" ")
  return html`<svg class="spark" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${label}, last ${points.length} samples, max ${Math.round(max)}"><polyline fill="none" stroke="currentColor" stroke-width="1.5" points="${coordinates}"/></svg>`
}
