// Checkouts of one pool, given in turn across the schemas asking. Views of one pool bound to other schemas
// (`PgClient.forSchema`: a process's tenants) share its connections; pg's pool serves waiting checkouts first come
// first served, so a tenant whose consumers ask back to back (a replay, a 100,000-event backlog) held most places
// of the queue and every other tenant's statement waited behind several of its statements. Here each schema with
// checkouts waiting gets one connection per turn: a quiet tenant's statement waits for one release at most, and one
// schema alone is served in arrival order as before.
//
// Turns alone were not enough: with a 100,000-event backlog holding every other place, a quiet tenant's statement
// ran beside four of the backlog's heavy ones on a saturated server, and its checkouts waited for their ends (bench
// t, 1,000 tenants: during a replay, quiet tenants' checkouts waited 70 ms on average, most of them waited, and
// their lag p50 went from 9 to 130-170 ms). So while other schemas use the pool (one holds or waits for a place, or
// took one within the last second), a schema holds one place at a time: every tenant with statements has one in
// flight, none has several. Keeping half of the pool free for the others instead changed nothing measurable (a
// backlog's three statements in flight load the server as four did). One schema alone (a single-tenant service, a
// tenant alone with work for a second) has the whole pool.
//
// Invariants: `inUse` counts the connections given out through this gate (at most the pool's `max`, read at every
// turn so that a raised `max` is used at once) and `held` the same per schema; a schema is in `turn` exactly while it
// has waiters; a waiter gets its connection's place before it is resumed, and hands it back through `give` whatever
// happens to it after. A schema held back while others use the pool holds a place, so a release of its own comes and
// serves the queue again (no timer is needed for the hold-back to lift); and no statement waits for a second place
// while holding one (a transaction runs its statements on its own connection), so holding back cannot deadlock.
import { Effect } from "effect"
import type pg from "pg"

interface Gate {
  inUse: number
  /** Places in use per schema (schemas holding none are absent). */
  readonly held: Map<string, number>
  /** The two schemas that took a place last (the latest first), and when. */
  readonly recent: Array<{ schema: string; at: number }>
  /** Waiting checkouts per schema, in arrival order. */
  readonly waiting: Map<string, Array<() => void>>
  /** Schemas with waiters, the next to be served first. */
  readonly turn: Array<string>
}

const gates = new WeakMap<pg.Pool, Gate>()

const gateOf = (pool: pg.Pool): Gate => {
  let gate = gates.get(pool)
  if (gate === undefined) {
    gate = { inUse: 0, held: new Map(), recent: [], waiting: new Map(), turn: [] }
    gates.set(pool, gate)
  }
  return gate
}

/** pg's default pool size when none was given. */
const capacity = (pool: pg.Pool): number => pool.options.max ?? 10

/** How long after its last checkout another schema still counts as using the pool. */
export const othersRecentMillis = 1_000

/** Another schema than `schema` holds or waits for a place, or took one within {@link othersRecentMillis}. */
const othersActive = (gate: Gate, schema: string, now: number): boolean => {
  if (gate.held.size > (gate.held.has(schema) ? 1 : 0)) return true
  if (gate.waiting.size > (gate.waiting.has(schema) ? 1 : 0)) return true
  const other = gate.recent[0]?.schema === schema ? gate.recent[1] : gate.recent[0]
  return other !== undefined && now - other.at < othersRecentMillis
}

/** Whether `schema` may take a place now: one is free, and it holds none or no other schema uses the pool. */
const mayTake = (pool: pg.Pool, gate: Gate, schema: string, now: number): boolean =>
  gate.inUse < capacity(pool) && (!gate.held.has(schema) || !othersActive(gate, schema, now))

const taken = (gate: Gate, schema: string, now: number) => {
  gate.inUse += 1
  gate.held.set(schema, (gate.held.get(schema) ?? 0) + 1)
  const latest = gate.recent[0]
  if (latest?.schema === schema) latest.at = now
  else {
    if (latest !== undefined) gate.recent[1] = latest
    gate.recent[0] = { schema, at: now }
  }
}

const serve = (pool: pg.Pool, gate: Gate) => {
  const now = Date.now()
  while (gate.inUse < capacity(pool)) {
    // The first schema in turn that may take a place; those held back keep their place in turn.
    const at = gate.turn.findIndex((schema) => mayTake(pool, gate, schema, now))
    if (at < 0) return
    const schema = gate.turn.splice(at, 1)[0]!
    const queue = gate.waiting.get(schema)!
    const next = queue.shift()!
    if (queue.length > 0) gate.turn.push(schema)
    else gate.waiting.delete(schema)
    taken(gate, schema, now)
    next()
  }
}

/**
 * Waits for this schema's turn (and, while other schemas use the pool, for its place in use to be handed back) to
 * check out a connection of `pool`; {@link give} hands the place back. Fails as pg's pool does (the same message)
 * when the turn has not come within the pool's `connectionTimeoutMillis`: a statement never waits for a connection
 * longer than `connectTimeout`, whether it waits here or in the pool.
 */
export const take = (pool: pg.Pool, schema: string): Effect.Effect<void, Error> =>
  Effect.callback<void, Error>((resume) => {
    const gate = gateOf(pool)
    const now = Date.now()
    if (gate.turn.length === 0 && mayTake(pool, gate, schema, now)) {
      taken(gate, schema, now)
      resume(Effect.void)
      return
    }
    let granted = false
    const leave = () => {
      const waiting = gate.waiting.get(schema)
      const at = waiting?.indexOf(grant) ?? -1
      if (waiting === undefined || at < 0) return
      waiting.splice(at, 1)
      if (waiting.length === 0) {
        gate.waiting.delete(schema)
        gate.turn.splice(gate.turn.indexOf(schema), 1)
      }
    }
    const timeoutMillis = pool.options.connectionTimeoutMillis
    const timer =
      timeoutMillis === undefined || timeoutMillis <= 0
        ? undefined
        : setTimeout(() => {
            leave()
            resume(Effect.fail(new Error("timeout exceeded when trying to connect")))
          }, timeoutMillis)
    const grant = () => {
      granted = true
      if (timer !== undefined) clearTimeout(timer)
      resume(Effect.void)
    }
    const queue = gate.waiting.get(schema)
    if (queue === undefined) {
      gate.waiting.set(schema, [grant])
      gate.turn.push(schema)
    } else queue.push(grant)
    serve(pool, gate)
    // Interrupted while waiting: leave the queue (or, granted meanwhile, hand the place on).
    return Effect.sync(() => {
      if (timer !== undefined) clearTimeout(timer)
      if (granted) give(pool, schema)
      else leave()
    })
  })

/** Hands a place `schema` took with {@link take} back: the next schema in turn that may take it gets it. */
export const give = (pool: pg.Pool, schema: string): void => {
  const gate = gateOf(pool)
  gate.inUse -= 1
  const held = (gate.held.get(schema) ?? 1) - 1
  if (held > 0) gate.held.set(schema, held)
  else gate.held.delete(schema)
  serve(pool, gate)
}

/** What the gate of `pool` holds now (for tests). */
export const snapshot = (pool: pg.Pool): { readonly inUse: number; readonly waiting: number } => {
  const gate = gateOf(pool)
  let waiting = 0
  for (const queue of gate.waiting.values()) waiting += queue.length
  return { inUse: gate.inUse, waiting }
}
