/**
 * `--count-queries`: counts round trips per statement (first line of the SQL) by wrapping `pg.Client#query`, to
 * show what one worker cycle costs. Only for profiling: it adds a little overhead itself.
 */
import pg from "pg"

const counts = new Map<string, { n: number; ms: number }>()

export const install = () => {
  const original = pg.Client.prototype.query as (...args: Array<unknown>) => unknown
  pg.Client.prototype.query = function (this: pg.Client, ...args: Array<unknown>) {
    const first = args[0]
    const text = typeof first === "string" ? first : ((first as { text?: string } | undefined)?.text ?? "?")
    const key = text.replace(/\s+/g, " ").trim().slice(0, 90)
    const started = performance.now()
    const c = counts.get(key) ?? counts.set(key, { n: 0, ms: 0 }).get(key)!
    c.n++
    const result = original.apply(this, args)
    if (result instanceof Promise)
      void result.then(
        () => void (c.ms += performance.now() - started),
        () => undefined
      )
    return result
  } as typeof pg.Client.prototype.query
}

export const reset = () => counts.clear()

export const report = () =>
  [...counts]
    .sort((a, b) => b[1].ms - a[1].ms)
    .slice(0, 25)
    .map(([k, c]) => `${String(c.n).padStart(8)} calls ${c.ms.toFixed(0).padStart(9)} ms  ${k}`)
    .join("\n")
