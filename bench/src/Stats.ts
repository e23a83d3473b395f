/** Small statistics for the reports: medians with min/max over repetitions, percentiles of latency samples. */

export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
  readonly runs: ReadonlyArray<number>
}

const sorted = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)

export const median = (xs: ReadonlyArray<number>) => {
  const s = sorted(xs)
  if (s.length === 0) return Number.NaN
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

export const spread = (runs: ReadonlyArray<number>): Spread => {
  const s = sorted(runs)
  return { median: median(s), min: s[0] ?? Number.NaN, max: s.at(-1) ?? Number.NaN, runs }
}

/** Nearest-rank percentile. */
export const percentile = (xs: ReadonlyArray<number>, p: number) => {
  const s = sorted(xs)
  if (s.length === 0) return Number.NaN
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!
}

export interface Latency {
  readonly samples: number
  readonly p50: number
  readonly p95: number
  readonly p99: number
  readonly max: number
}

export const latency = (xs: ReadonlyArray<number>): Latency => ({
  samples: xs.length,
  p50: percentile(xs, 50),
  p95: percentile(xs, 95),
  p99: percentile(xs, 99),
  // A loop, not Math.max(...xs): a long run's samples (more than about 120,000) overflow the call stack as arguments.
  max: xs.length === 0 ? Number.NaN : xs.reduce((m, x) => (x > m ? x : m), Number.NEGATIVE_INFINITY)
})

export const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "-"

export const fmtSpread = (s: Spread, digits = 0) =>
  s.runs.length > 1 ? `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})` : fmt(s.median, digits)

export const ratio = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}x` : "-")
