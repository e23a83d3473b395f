/**
 * `--count-queries`: counts round trips per statement (its first 90 characters; most frequent first) by wrapping `pg.Client#query`, to
 * show what one worker cycle costs. Only for profiling: it adds a little overhead itself.
 */
import pg from "pg"

const counts = new Map<string, { n: number; ms: number }>()
const afterSet = new WeakSet<pg.Client>()

export const install = () => {
  const original = pg.Client.prototype.query as (...args: Array<unknown>) => unknown
  pg.Client.prototype.query = function (this: pg.Client, ...args: Array<unknown>) {
    const first = args[0]
    const text = typeof first === "string" ? first : ((first as { text?: string } | undefined)?.text ?? "?")
    // A tenant's `SET search_path` and the deallocation of its prepared statements count together, not per name.
    // Schema names are left out, so a statement counts once whichever tenant ran it.
    const key = text
      .replace(/\s+/g, " ")
      .trim()
      .replace(/^(SET search_path TO|DEALLOCATE) .*/, "$1 …")
      .replace(/"[^"]*"\.(?="?wh_)/g, "")
      .slice(0, 90)
    // What made a connection move to another schema: the statement that followed the `SET`.
    if (afterSet.has(this)) {
      afterSet.delete(this)
      const moved = `  after a SET: ${key}`
      const m = counts.get(moved) ?? counts.set(moved, { n: 0, ms: 0 }).get(moved)!
      m.n++
    }
    if (key.startsWith("SET search_path")) afterSet.add(this)
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

let total = 0

/**
 * Counts every round trip of the process (a number, nothing per statement): cheap enough to stay on in every tenant
 * worker process, whose idle part reports it (`total`). Installed before {@link install} when both are.
 */
export const installTotal = () => {
  const original = pg.Client.prototype.query as (...args: Array<unknown>) => unknown
  pg.Client.prototype.query = function (this: pg.Client, ...args: Array<unknown>) {
    total++
    return original.apply(this, args)
  } as typeof pg.Client.prototype.query
}

/** Round trips since {@link installTotal}. */
export const totalRoundTrips = () => total

export const reset = () => counts.clear()

export const report = () =>
  `${[...counts.values()].reduce((n, c) => n + c.n, 0)} round trips in all\n` +
  [...counts]
    .sort((a, b) => b[1].n - a[1].n)
    .slice(0, 40)
    .map(([k, c]) => `${String(c.n).padStart(8)} calls ${c.ms.toFixed(0).padStart(9)} ms  ${k}`)
    .join("\n")
