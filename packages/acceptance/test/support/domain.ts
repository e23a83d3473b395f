// The acceptance domain: accounts with deposits and withdrawals, two perspectives, and the same folds written
// in SQL over `wh_events` alone. `trail` records the order in which events were applied, so a reordered,
// skipped or doubled event shows as a mismatch, not only a wrong total.
import { existsSync, writeSync } from "node:fs"
import * as Path from "node:path"
import { Duration, Effect, Schema } from "effect"
import { EventDefinition, EventRegistry, Perspective } from "whizbang"

const Movement = Schema.Struct({ accountId: Schema.String, amount: Schema.Number, tag: Schema.String })

export const Deposited = EventDefinition.make("Deposited", { payload: Movement, streamId: (p) => p.accountId })
export const Withdrawn = EventDefinition.make("Withdrawn", { payload: Movement, streamId: (p) => p.accountId })

const step = (trail: string, tag: string) => (trail === "" ? tag : `${trail},${tag}`)

/**
 * A cycle "in flight" for the purge scenario: a worker process started with ACCEPTANCE_HOLD_DIR blocks inside the
 * apply of the event tagged "hold" (after its fetch, before its commit), after printing "held", until the test
 * writes the file `release`. The handler is synchronous, so it blocks the whole worker process (the test and the
 * purge run in another process); `writeSync` makes sure "held" is out before the block.
 */
const holdIfAsked = (tag: string) => {
  const dir = process.env.ACCEPTANCE_HOLD_DIR
  if (dir === undefined || tag !== "hold" || existsSync(Path.join(dir, "release"))) return
  writeSync(1, "held\n")
  const cell = new Int32Array(new SharedArrayBuffer(4))
  const deadline = Date.now() + 20_000
  while (!existsSync(Path.join(dir, "release")) && Date.now() < deadline) Atomics.wait(cell, 0, 0, 5)
}

/** The tag of a deposit `balance` fails to apply (`activity` applies it). */
export const poison = "poison"

export const definitions = Effect.sync(() => {
  const events = EventRegistry.make([Deposited, Withdrawn])
  const balance = Perspective.make({
    name: "balance",
    events: [Deposited, Withdrawn],
    model: Schema.Struct({ total: Schema.Number, count: Schema.Number, trail: Schema.String }),
    initial: { total: 0, count: 0, trail: "" },
    apply: {
      Deposited: (m, e) => {
        const { amount, tag } = e.payload
        holdIfAsked(tag)
        // A marked payload the balance cannot apply: retried with backoff, then dead-lettered (the honest-wait scenarios).
        if (tag === poison) throw new Error(`poison deposit on ${e.payload.accountId}`)
        return { total: m.total + amount, count: m.count + 1, trail: step(m.trail, tag) }
      },
      Withdrawn: (m, e) => {
        const { amount, tag } = e.payload
        return { total: m.total - amount, count: m.count + 1, trail: step(m.trail, tag) }
      }
    }
  })
  const activity = Perspective.make({
    name: "activity",
    events: [Deposited, Withdrawn],
    model: Schema.Struct({ deposits: Schema.Number, trail: Schema.String }),
    initial: { deposits: 0, trail: "" },
    apply: {
      Deposited: (m, e) => ({ deposits: m.deposits + 1, trail: step(m.trail, e.payload.tag) }),
      Withdrawn: (m, e) => ({ deposits: m.deposits, trail: step(m.trail, e.payload.tag) })
    }
  })
  // Version 2 of balance: the same fold, and every row says which version wrote it (`shape`), so a read that mixed
  // versions would show. Not in `perspectives`: an instance runs it only when asked (ACCEPTANCE_PERSPECTIVES).
  const balanceV2 = Perspective.make({
    name: "balance",
    version: 2,
    events: [Deposited, Withdrawn],
    model: Schema.Struct({ total: Schema.Number, count: Schema.Number, trail: Schema.String, shape: Schema.String }),
    initial: { total: 0, count: 0, trail: "", shape: "v2" },
    apply: {
      Deposited: (m, e) => ({ ...m, total: m.total + e.payload.amount, count: m.count + 1, trail: step(m.trail, e.payload.tag) }),
      Withdrawn: (m, e) => ({ ...m, total: m.total - e.payload.amount, count: m.count + 1, trail: step(m.trail, e.payload.tag) })
    }
  })
  return { events, balance, activity, balanceV2, perspectives: [balance, activity] as const }
})

/** Worker options that keep the suite fast (the defaults poll every second and debounce rewinds for 5 s). */
export const options = {
  pollingInterval: Duration.millis(50),
  notifyHealthyPollingInterval: Duration.millis(50),
  drainBatcher: { slidingWindow: Duration.millis(2), maxWait: Duration.millis(20), maxSize: 1000 }
}
export const rewind = { debounceWindow: Duration.millis(50), debounceCap: Duration.millis(500) } as const

const balanceFold = `
  SELECT stream_id::text AS id,
         sum(CASE event_type WHEN 'Deposited' THEN (payload->>'amount')::numeric ELSE -(payload->>'amount')::numeric END) AS total,
         count(*)::int AS count,
         string_agg(payload->>'tag', ',' ORDER BY event_id) AS trail
    FROM wh_events WHERE event_type IN ('Deposited', 'Withdrawn') GROUP BY stream_id`

const activityFold = `
  SELECT stream_id::text AS id,
         count(*) FILTER (WHERE event_type = 'Deposited')::int AS deposits,
         string_agg(payload->>'tag', ',' ORDER BY event_id) AS trail
    FROM wh_events WHERE event_type IN ('Deposited', 'Withdrawn') GROUP BY stream_id`

/** Read models that differ from the SQL fold (or exist on one side only), per perspective. */
export const mismatches = {
  balance__v2: `
    WITH fold AS (${balanceFold})
    SELECT count(*)::int AS n FROM fold FULL JOIN wh_per_balance__v2 p ON p.id::text = fold.id
     WHERE p.id IS NULL OR fold.id IS NULL OR p.data->>'shape' IS DISTINCT FROM 'v2'
        OR (p.data->>'total')::numeric <> fold.total OR (p.data->>'count')::int <> fold.count OR p.data->>'trail' <> fold.trail`,
  balance: `
    WITH fold AS (${balanceFold})
    SELECT count(*)::int AS n FROM fold FULL JOIN wh_per_balance p ON p.id::text = fold.id
     WHERE p.id IS NULL OR fold.id IS NULL
        OR (p.data->>'total')::numeric <> fold.total OR (p.data->>'count')::int <> fold.count OR p.data->>'trail' <> fold.trail`,
  activity: `
    WITH fold AS (${activityFold})
    SELECT count(*)::int AS n FROM fold FULL JOIN wh_per_activity p ON p.id::text = fold.id
     WHERE p.id IS NULL OR fold.id IS NULL
        OR (p.data->>'deposits')::int <> fold.deposits OR p.data->>'trail' <> fold.trail`
} as const

// `work`: what is left to apply — work rows, and streams of history planned for a replay (a rebuild, a new version).
export const counts = `
  SELECT (SELECT count(*)::int FROM wh_events) AS events,
         (SELECT count(*)::int FROM wh_perspective_events) + (SELECT count(*)::int FROM wh_perspective_backfill) AS work,
         (SELECT count(*)::int FROM wh_dead_letters) AS dead_letters`
