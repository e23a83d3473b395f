/**
 * The HTTP API (plain node:http): commands append events; GET reads the order summary after waiting until the
 * perspective has caught up with the version the caller last wrote (read-your-writes).
 */
import type * as Http from "node:http"
import { Effect, Option, Schema } from "effect"
import { EventId, EventStore, PerspectiveStore, type PerspectiveSyncAwaiter, SyncAwareLens } from "whizbang"
import { CustomerCharged, customerStats, ItemAdded, OrderCreated, OrderPaid, orderSummary } from "./domain.js"
import * as Order from "./order.js"

export type Services = EventStore.EventStore | PerspectiveStore.PerspectiveStore | PerspectiveSyncAwaiter.PerspectiveSyncAwaiter

interface Reply {
  readonly status: number
  readonly body: unknown
}

const CreateOrder = Schema.Struct({ customerId: Schema.String })
const AddItem = Schema.Struct({ sku: Schema.String, quantity: Schema.Int, unitPrice: Schema.Number })
const ok = (status: number, body: unknown): Reply => ({ status, body })

/**
 * Read-your-writes: waits until the perspective has processed every pending event of the stream (in this process
 * or any other worker, told by NOTIFY), then reads. A timed-out wait is reported, never hidden.
 */
const readSynced = (id: string) =>
  Effect.map(SyncAwareLens.getById(orderSummary, id), ({ row, sync }) => ({
    row: Option.getOrUndefined(row),
    // Fresh only when nothing awaited is missing: a timeout or a dead-lettered event is not "synced".
    synced: sync._tag === "Synced" || sync._tag === "NoPendingEvents"
  }))

const decode = <A>(schema: Schema.Codec<A, unknown>, body: unknown) =>
  Schema.decodeUnknownEffect(schema)(body).pipe(Effect.mapError((e) => ok(400, { error: e.message })))

export const route = (method: string, path: string, body: unknown): Effect.Effect<Reply, never, Services> =>
  Effect.gen(function* () {
    const store = yield* EventStore.EventStore
    const parts = path.split("/").filter(Boolean)
    const orderId = parts[1]
    if (method === "GET" && parts[0] === "customers" && parts.length === 2 && EventId.isUuid(parts[1])) {
      const stats = yield* PerspectiveStore.getById(customerStats, parts[1]!)
      return Option.isSome(stats) ? ok(200, stats.value) : ok(404, { error: "no paid orders yet" })
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
    // Commands decide on the order's own stream (Order.loadOpen), and append with the version they decided on.
    if (method === "POST" && parts[2] === "items" && orderId) {
      const item = yield* decode(AddItem, body)
      const order = yield* Order.loadOpen(orderId)
      const result = yield* store.append(orderId, [ItemAdded.make({ orderId, ...item })], { expectedVersion: order.version })
      return ok(200, { orderId, version: result.nextExpectedVersion })
    }
    if (method === "POST" && parts[2] === "pay" && orderId) {
      const order = yield* Order.loadOpen(orderId)
      const { customerId, total: amount } = order
      const paid = yield* store.append(orderId, [OrderPaid.make({ orderId, customerId, amount })], { expectedVersion: order.version })
      yield* store.append(customerId, [CustomerCharged.make({ customerId, orderId, amount })], { causationId: paid.events[0]!.eventId })
      return ok(200, { orderId, version: paid.nextExpectedVersion })
    }
    if (method === "GET" && orderId && parts.length === 2) {
      const { row, synced } = yield* readSynced(orderId)
      if (row === undefined) return ok(404, { error: "no such order" })
      return ok(synced ? 200 : 202, { ...row.data, version: row.version, synced })
    }
    return ok(404, { error: "not found" })
  }).pipe(
    Effect.catchTags({
      OrderRejected: (e) => Effect.succeed(ok(e.reason === "NotFound" ? 404 : 409, { error: e.message })),
      WrongExpectedVersion: (e) => Effect.succeed(ok(409, { error: e.message })),
      InvalidEventPayload: (e) => Effect.succeed(ok(400, { error: e.message })),
      InvalidStreamId: (e) => Effect.succeed(ok(400, { error: e.message })),
      InvalidRequest: (e) => Effect.succeed(ok(400, { error: e.message }))
    }),
    Effect.catch((e) =>
      Effect.succeed(typeof e === "object" && e !== null && "status" in e ? (e as Reply) : ok(500, { error: String(e) }))
    ),
    Effect.catchDefect((d) => Effect.succeed(ok(500, { error: String(d) })))
  )

/** A node:http listener running `route` with the given runner. */
export const listener =
  (run: (effect: Effect.Effect<Reply, never, Services>) => Promise<Reply>): Http.RequestListener =>
  (req, res) => {
    let raw = ""
    req.setEncoding("utf8")
    req.on("data", (chunk: string) => {
      raw += chunk
      if (raw.length > 64 * 1024) req.destroy()
    })
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://localhost")
      let body: unknown
      try {
        body = raw === "" ? undefined : JSON.parse(raw)
      } catch {
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: "body is not JSON" }))
        return
      }
      void run(route(req.method ?? "GET", url.pathname, body)).then((reply) => {
        res.writeHead(reply.status, { "content-type": "application/json" }).end(JSON.stringify(reply.body))
      })
    })
  }
