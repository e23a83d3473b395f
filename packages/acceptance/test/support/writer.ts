// The test process's side: a write-side service (`Whizbang.layerWithoutWorker`, as the README composes it for
// processes whose workers run elsewhere) and the appenders.
import { Effect, Layer } from "effect"
import { EventId, EventStore, PgClient, Whizbang } from "whizbang"
import * as Domain from "./domain.js"

export const layer = (url: string, schema: string) =>
  Layer.unwrap(
    Effect.map(Domain.definitions, ({ events, perspectives }) =>
      Whizbang.layerWithoutWorker({
        databaseUrl: url,
        schema,
        serviceName: "acceptance-writer",
        events,
        perspectives,
        options: Domain.options,
        watchdog: { interval: null }
      })
    )
  )

/** Deterministic pseudo-random numbers (a linear congruential generator), one sequence per appender. */
const random = (seed: number) => {
  let state = seed >>> 0
  return (below: number) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    return state % below
  }
}

export const streams = (n: number) => Array.from({ length: n }, () => EventId.unsafeMake())

/**
 * `appenders` concurrent fibers, each appending `perAppender` events in appends of `batch` events to streams
 * drawn from `streamIds` (so appenders overlap on streams). Returns the number of events appended.
 */
export const appendConcurrently = (options: {
  readonly streamIds: ReadonlyArray<string>
  readonly appenders: number
  readonly perAppender: number
  readonly batch: number
}) =>
  Effect.gen(function* () {
    const store = yield* EventStore.EventStore
    yield* Effect.forEach(
      Array.from({ length: options.appenders }, (_, a) => a),
      (a) =>
        Effect.gen(function* () {
          const next = random(a + 1)
          for (let i = 0; i < options.perAppender; i += options.batch) {
            const accountId = options.streamIds[next(options.streamIds.length)]!
            const events = Array.from({ length: Math.min(options.batch, options.perAppender - i) }, (_, k) => {
              const payload = { accountId, amount: 1 + next(100), tag: `${a}.${i + k}` }
              return next(4) === 0 ? Domain.Withdrawn.make(payload) : Domain.Deposited.make(payload)
            })
            yield* store.append(accountId, events)
          }
        }),
      { concurrency: "unbounded", discard: true }
    )
    return options.appenders * options.perAppender
  })

export interface Counts {
  readonly events: number
  readonly work: number
  readonly dead_letters: number
}

export const counts = Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
  Effect.map(client.query<Counts>(Domain.counts), (rows) => rows[0]!)
)

export const mismatches = (perspective: keyof typeof Domain.mismatches) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
    Effect.map(client.query<{ n: number }>(Domain.mismatches[perspective]), (rows) => rows[0]!.n)
  )

/** Transactions that stored events of more than one stream: appends that went together in one statement. */
export const sharedTransactions = Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
  Effect.map(
    client.query<{ n: string }>(
      "SELECT count(*) AS n FROM (SELECT xmin::text FROM wh_events GROUP BY 1 HAVING count(DISTINCT stream_id) > 1) t"
    ),
    (rows) => Number(rows[0]!.n)
  )
)

/** Events stored more than once (the same tag twice): an append applied twice. */
/** How many of these event ids (acknowledged appends) the schema does not hold. */
export const missingEvents = (eventIds: ReadonlyArray<string>) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
    Effect.map(
      client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM unnest($1::uuid[]) AS a(id) WHERE NOT EXISTS (SELECT 1 FROM wh_events e WHERE e.event_id = a.id)",
        [eventIds]
      ),
      (rows) => rows[0]!.n
    )
  )

export const doubledTags = Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
  Effect.map(
    client.query<{ n: number }>("SELECT count(*)::int AS n FROM (SELECT payload->>'tag' FROM wh_events GROUP BY 1 HAVING count(*) > 1) t"),
    (rows) => rows[0]!.n
  )
)
