/**
 * The HTTP API (plain node:http): commands append events; GET reads the order summary after waiting until the
 * perspective has caught up with the version the caller last wrote (read-your-writes).
 */
import * as Http from "node:http"
import { Duration, Effect, Option, Schema } from "effect"
import { EventId, EventStore, PerspectiveStore } from "whizbang"
import { CustomerCharged, ItemAdded, OrderCreated, OrderPaid } from "./domain.js"

export type Services = EventStore.EventStore | PerspectiveStore.PerspectiveStore

interface Reply {
  readonly status: number
  readonly body: unknown
}

const CreateOrder = Schema.Struct({ customerId: Schema.String })
const AddItem = Schema.Struct({ sku: Schema.String, quantity: Schema.Int, unitPrice: Schema.Number })
const ok = (status: number, body: unknown): Reply => ({ status, body })

/** Waits (bounded) until the perspective's row for `id` has applied at least `version` events. */
const readAtLeast = (perspective: string, id: string, version: number) =>
  Effect.gen(function* () {
    const store = yield* PerspectiveStore.PerspectiveStore
    const deadline = Date.now() + 5000
    for (;;) {
      const row = yield* store.getById(perspective, id)
      if (Option.isSome(row) && row.value.version >= version) return { row: row.value, synced: true }
      if (Date.now() > deadline) return { row: Option.getOrUndefined(row), synced: false }
      yield* Effect.sleep(Duration.millis(5))
    }
  })

const decode = <S extends Schema.Top>(schema: S, body: unknown) =>
  Schema.decodeUnknownEffect(schema as Schema.Codec<S["Type"], unknown>)(body).pipe(Effect.mapError((e) => ok(400, { error: e.message })))

export const route = (method: string, path: string, body: unknown, query: URLSearchParams): Effect.Effect<Reply, never, Services> =>
  Effect.gen(function* () {
    const store = yield* EventStore.EventStore
    const parts = path.split("/").filter(Boolean)
    const orderId = parts[1]
    if (method === "GET" && parts[0] === "customers" && parts.length === 2 && EventId.isUuid(parts[1])) {
      const stats = yield* Effect.flatMap(Effect.service(PerspectiveStore.PerspectiveStore), (s) => s.getById("customer_stats", parts[1]!))
      return Option.isSome(stats) ? ok(200, stats.value.data) : ok(404, { error: "no paid orders yet" })
    }
    if (parts[0] !== "orders") return ok(404, { error: "not found" })
    if (orderId !== undefined && !EventId.isUuid(orderId)) return ok(400, { error: "order ids are UUIDs" })
    if (method === "POST" && parts.length === 1) {
      const { customerId } = yield* decode(CreateOrder, body)
      if (!EventId.isUuid(customerId)) return ok(400, { error: "customerId must be a UUID" })
      const id = EventId.unsafeMake()
      const result = yield* store.append(id, [OrderCreated.make({ orderId: id, customerId })], { expectedVersion: "noStream" })
      return ok(201, { orderId: id, version: result.nextExpectedVersion })
    }
    if (method === "POST" && parts[2] === "items" && orderId) {
      const item = yield* decode(AddItem, body)
      const result = yield* store.append(orderId, [ItemAdded.make({ orderId, ...item })])
      return ok(200, { orderId, version: result.nextExpectedVersion })
    }
    if (method === "POST" && parts[2] === "pay" && orderId) {
      const { row } = yield* readAtLeast("order_summary", orderId, yield* store.streamVersion(orderId))
      const summary = row?.data as { customerId: string; total: number; status: string } | undefined
      if (summary === undefined) return ok(404, { error: "no such order" })
      if (summary.status === "paid") return ok(409, { error: "already paid" })
      const paid = yield* store.append(orderId, [OrderPaid.make({ orderId, customerId: summary.customerId, amount: summary.total })], {
        expectedVersion: yield* store.streamVersion(orderId)
      })
      yield* store.append(summary.customerId, [CustomerCharged.make({ customerId: summary.customerId, orderId, amount: summary.total })], {
        causationId: paid.events[0]!.eventId
      })
      return ok(200, { orderId, version: paid.nextExpectedVersion })
    }
    if (method === "GET" && orderId && parts.length === 2) {
      // Read-your-writes: the caller passes the version its last write returned.
      const { row, synced } = yield* readAtLeast("order_summary", orderId, Number(query.get("version") ?? 1))
      if (row === undefined) return ok(404, { error: "no such order" })
      return ok(synced ? 200 : 202, { ...(row.data as object), version: row.version, synced })
    }
    return ok(404, { error: "not found" })
  }).pipe(
    Effect.catchTags({
      WrongExpectedVersion: (e) => Effect.succeed(ok(409, { error: e.message })),
      InvalidEventPayload: (e) => Effect.succeed(ok(400, { error: e.message })),
      InvalidStreamId: (e) => Effect.succeed(ok(400, { error: e.message })),
      InvalidRequest: (e) => Effect.succeed(ok(400, { error: e.message }))
    }),
    Effect.catch((e) => Effect.succeed(typeof e === "object" && e !== null && "status" in e ? (e as Reply) : ok(500, { error: String(e) }))),
    Effect.catchDefect((d) => Effect.succeed(ok(500, { error: String(d) })))
  )

/** A node:http listener running `route` with the given runner. */
export const listener = (run: (effect: Effect.Effect<Reply, never, Services>) => Promise<Reply>): Http.RequestListener =>
  (req, res) => {
    let raw = ""
    req.setEncoding("utf8")
    req.on("data", (chunk: string) => {
      raw += chunk
      if (raw.length > 64 * 1024) req.destroy()
    })
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://localhost")
      let body: unknown = undefined
      try {
        body = raw === "" ? undefined : JSON.parse(raw)
      } catch {
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: "body is not JSON" }))
        return
      }
      void run(route(req.method ?? "GET", url.pathname, body, url.searchParams)).then((reply) => {
        res.writeHead(reply.status, { "content-type": "application/json" }).end(JSON.stringify(reply.body))
      })
    })
  }
