/**
 * Peer: Emmett 0.42 PostgreSQL async projections — events appended through Emmett's event store, a
 * `postgreSQLEventStoreConsumer` with two projectors, each a `pongoSingleStreamProjection` (one Pongo document per
 * stream) folding with the same functions.
 */
import {
  getPostgreSQLEventStore,
  pongoSingleStreamProjection,
  postgreSQLEventStoreConsumer,
  type PostgresReadEventMetadata
} from "@event-driven-io/emmett-postgresql"
import type { Event } from "@event-driven-io/emmett"
import type pg from "pg"
import * as Domain from "../Domain.js"

type Deposited = Event<"Deposited", Domain.Payload & Record<string, unknown>>
type Doc<M> = M & Record<string, unknown>

/** Appends events `[from, to)`: one append per stream with all its events of the range, `concurrency` at a time. */
export const load = async (url: string, from: number, to: number, streams: number, concurrency = 1) => {
  const store = getPostgreSQLEventStore(url)
  try {
    const byStream = new Map<number, Array<Deposited>>()
    for (let i = from; i < to; i++) {
      const s = i % streams
      const list = byStream.get(s) ?? byStream.set(s, []).get(s)!
      list.push({
        type: "Deposited",
        data: { accountId: Domain.streamId(s), amount: Domain.amountOf(i), seq: Math.floor(i / streams) + 1 }
      } as Deposited)
    }
    const work = [...byStream]
    let next = 0
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < work.length) {
          const [s, events] = work[next++]!
          await store.appendToStream(Domain.streamId(s), events)
        }
      })
    )
  } finally {
    await store.close()
  }
}

export const process = async (url: string, batchSize = 100) => {
  const consumer = postgreSQLEventStoreConsumer<Deposited>({
    connectionString: url,
    stopWhen: { noMessagesLeft: true },
    pulling: { batchSize }
  })
  consumer.projector<Deposited>({
    processorId: "counter",
    projection: pongoSingleStreamProjection<Doc<Domain.Counter>, Deposited, PostgresReadEventMetadata, Deposited>({
      collectionName: "counter",
      canHandle: ["Deposited"],
      initialState: () => ({ ...Domain.counterInitial }),
      evolve: (doc: Doc<Domain.Counter>, e: Deposited) => ({ ...doc, ...Domain.foldCounter(doc, e.data) })
    })
  })
  consumer.projector<Deposited>({
    processorId: "summary",
    projection: pongoSingleStreamProjection<Doc<Domain.Summary>, Deposited, PostgresReadEventMetadata, Deposited>({
      collectionName: "summary",
      canHandle: ["Deposited"],
      initialState: () => ({ ...Domain.summaryInitial }),
      evolve: (doc: Doc<Domain.Summary>, e: Deposited) => ({ ...doc, ...Domain.foldSummary(doc, e.data) })
    })
  })
  const start = performance.now()
  await consumer.start()
  const end = performance.now()
  await consumer.close()
  return { start, end }
}

export const read = async (db: pg.Pool) => {
  const one = async (name: string) =>
    new Map((await db.query<{ id: string; data: unknown }>(`SELECT _id AS id, data FROM ${name}`)).rows.map((r) => [r.id, r.data]))
  return { counter: await one("counter"), summary: await one("summary") }
}
