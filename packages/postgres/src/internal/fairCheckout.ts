// Checkouts of one pool, given in turn across the schemas asking. Views of one pool bound to other schemas
// (`PgClient.forSchema`: a process's tenants) share its connections; pg's pool serves waiting checkouts first come
// first served, so a tenant whose consumers ask back to back (a replay, a 100,000-event backlog) held most places
// of the queue and every other tenant's statement waited behind several of its statements. Here each schema with
// checkouts waiting gets one connection per turn: a quiet tenant's statement waits for one release at most, and one
// schema alone is served in arrival order as before.
//
// Invariants: `inUse` counts the connections given out through this gate (at most the pool's `max`, read at every
// turn so that a raised `max` is used at once); a schema is in `turn` exactly while it has waiters; a waiter gets
// its connection's place before it is resumed, and hands it back through `give` whatever happens to it after.
import { Effect } from "effect"
import type pg from "pg"

interface Gate {
  inUse: number
  /** Waiting checkouts per schema, in arrival order. */
  readonly waiting: Map<string, Array<() => void>>
  /** Schemas with waiters, the next to be served first. */
  readonly turn: Array<string>
}

const gates = new WeakMap<pg.Pool, Gate>()

const gateOf = (pool: pg.Pool): Gate => {
  let gate = gates.get(pool)
  if (gate === undefined) {
    gate = { inUse: 0, waiting: new Map(), turn: [] }
    gates.set(pool, gate)
  }
  return gate
}

/** pg's default pool size when none was given. */
const capacity = (pool: pg.Pool): number => pool.options.max ?? 10

const serve = (pool: pg.Pool, gate: Gate) => {
  while (gate.inUse < capacity(pool) && gate.turn.length > 0) {
    const schema = gate.turn.shift()!
    const queue = gate.waiting.get(schema)!
    const next = queue.shift()!
    if (queue.length > 0) gate.turn.push(schema)
    else gate.waiting.delete(schema)
    gate.inUse += 1
    next()
  }
}

/**
 * Waits for this schema's turn to check out a connection of `pool`; {@link give} hands the place back. Fails as pg's
 * pool does (the same message) when the turn has not come within the pool's `connectionTimeoutMillis`: a statement
 * never waits for a connection longer than `connectTimeout`, whether it waits here or in the pool.
 */
export const take = (pool: pg.Pool, schema: string): Effect.Effect<void, Error> =>
  Effect.callback<void, Error>((resume) => {
    const gate = gateOf(pool)
    if (gate.turn.length === 0 && gate.inUse < capacity(pool)) {
      gate.inUse += 1
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
      if (granted) give(pool)
      else leave()
    })
  })

/** Hands a place taken with {@link take} back: the next schema in turn gets it. */
export const give = (pool: pg.Pool): void => {
  const gate = gateOf(pool)
  gate.inUse -= 1
  serve(pool, gate)
}

/** What the gate of `pool` holds now (for tests). */
export const snapshot = (pool: pg.Pool): { readonly inUse: number; readonly waiting: number } => {
  const gate = gateOf(pool)
  let waiting = 0
  for (const queue of gate.waiting.values()) waiting += queue.length
  return { inUse: gate.inUse, waiting }
}
