import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { PgClient } from "@whizbang/postgres"
import { TestDatabase } from "@whizbang/testing"
import { Duration, Effect, ManagedRuntime } from "effect"
import { PerspectiveWorker } from "whizbang"
import { listener } from "../src/api.js"
import * as Service from "../src/service.js"

const fast = {
  pollingInterval: Duration.millis(50),
  notifyHealthyPollingInterval: Duration.millis(50),
  drainBatcher: { slidingWindow: Duration.millis(5), maxWait: Duration.millis(50), maxSize: 1000 }
}

/** Starts the real service and HTTP server on a fresh database; returns a JSON client. */
const startApi = Effect.gen(function* () {
  const { url } = yield* Effect.service(TestDatabase.TestDatabase)
  const runtime = yield* Effect.acquireRelease(
    Effect.promise(async () => {
      const rt = ManagedRuntime.make(Service.layer({ databaseUrl: url, options: fast }))
      await rt.runPromise(Effect.void)
      return rt
    }),
    (rt) => Effect.promise(() => rt.dispose())
  )
  const server = yield* Effect.acquireRelease(
    Effect.callback<Http.Server>((resume) => {
      const s = Http.createServer(listener((effect) => runtime.runPromise(effect)))
      s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
    }),
    (s) => Effect.callback<void>((resume) => void s.close(() => resume(Effect.void)))
  )
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const call = (method: string, path: string, body?: unknown) =>
    Effect.promise(async () => {
      const response = await fetch(base + path, {
        method,
        ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } })
      })
      return { status: response.status, body: (await response.json()) as Record<string, any> }
    })
  return { call, runtime }
})

const customerId = "0195f0a4-8c7e-7c56-9a4e-3d8b2f1c0a11"

describe("orders example over HTTP", () => {
  it.live(
    "create, add items, pay, and read your own writes; the confirmation lands in the outbox once",
    () =>
      Effect.gen(function* () {
        const { call, runtime } = yield* startApi
        const created = yield* call("POST", "/orders", { customerId })
        expect(created.status).toBe(201)
        const orderId = created.body.orderId as string
        const first = yield* call("GET", `/orders/${orderId}`)
        expect(first.body).toMatchObject({ orderId, customerId, items: [], total: 0, status: "open", synced: true })
        expect((yield* call("POST", `/orders/${orderId}/items`, { sku: "tea", quantity: 2, unitPrice: 3.5 })).status).toBe(200)
        const afterItem = yield* call("GET", `/orders/${orderId}`)
        expect(afterItem.body).toMatchObject({ total: 7, items: [{ sku: "tea", quantity: 2, unitPrice: 3.5 }], synced: true })
        const paid = yield* call("POST", `/orders/${orderId}/pay`)
        expect(paid.status).toBe(200)
        const afterPay = yield* call("GET", `/orders/${orderId}`)
        expect(afterPay.body).toMatchObject({ status: "paid", total: 7, synced: true })
        expect((yield* call("POST", `/orders/${orderId}/pay`)).status).toBe(409)
        // The customer's stats and the outbox are written by the worker; wait for the worker to go idle.
        yield* Effect.promise(() =>
          runtime.runPromise(Effect.flatMap(Effect.service(PerspectiveWorker.PerspectiveWorker), (w) => w.awaitIdle) as Effect.Effect<void>)
        )
        expect((yield* call("GET", `/customers/${customerId}`)).body).toEqual({ customerId, ordersPaid: 1, totalSpent: 7 })
        const outbox = yield* Effect.promise(() =>
          runtime.runPromise(
            Effect.flatMap(Effect.service(PgClient.PgClient), (c) =>
              c.query<{ order_id: string; message: string }>("select order_id, message from orders_outbox")
            )
          )
        )
        expect(outbox).toEqual([{ order_id: orderId, message: `Thank you! Order ${orderId} is paid (7.00).` }])
      }).pipe(Effect.scoped, Effect.provide(TestDatabase.layer)),
    60_000
  )

  it.live(
    "a paid order takes no more items, and racing items and payments never charge a total the order does not hold",
    () =>
      Effect.gen(function* () {
        const { call, runtime } = yield* startApi
        const orderId = (yield* call("POST", "/orders", { customerId })).body.orderId as string
        expect((yield* call("POST", `/orders/${orderId}/items`, { sku: "tea", quantity: 1, unitPrice: 4 })).status).toBe(200)
        expect((yield* call("POST", `/orders/${orderId}/pay`)).status).toBe(200)
        const late = yield* call("POST", `/orders/${orderId}/items`, { sku: "cake", quantity: 1, unitPrice: 5 })
        expect(late).toEqual({ status: 409, body: { error: "the order is already paid" } })
        expect((yield* call("POST", `/orders/${customerId}/items`, { sku: "cake", quantity: 1, unitPrice: 5 })).status).toBe(404)

        // 20 orders, each with 5 items and a payment sent at once: whatever lands, the charge equals the order's total.
        const racing = yield* Effect.forEach(
          Array.from({ length: 20 }, () => undefined),
          () =>
            Effect.gen(function* () {
              const id = (yield* call("POST", "/orders", { customerId })).body.orderId as string
              const item = () => call("POST", `/orders/${id}/items`, { sku: "x", quantity: 1, unitPrice: 1 })
              const replies = yield* Effect.all([item(), item(), call("POST", `/orders/${id}/pay`), item(), item(), item()], {
                concurrency: "unbounded"
              })
              for (const r of replies) expect([200, 409]).toContain(r.status)
              return id
            }),
          { concurrency: 4 }
        )
        yield* Effect.promise(() =>
          runtime.runPromise(Effect.flatMap(Effect.service(PerspectiveWorker.PerspectiveWorker), (w) => w.awaitIdle) as Effect.Effect<void>)
        )
        const rows = yield* Effect.promise(() =>
          runtime.runPromise(
            Effect.flatMap(Effect.service(PgClient.PgClient), (c) =>
              c.query<{ stream_id: string; items: number; paid: number; after_paid: number; charged: number | null }>(
                `select e.stream_id::text,
                        count(*) filter (where e.event_type = 'ItemAdded')::int as items,
                        count(*) filter (where e.event_type = 'OrderPaid')::int as paid,
                        count(*) filter (where e.event_type = 'ItemAdded' and e.stream_version > p.stream_version)::int as after_paid,
                        max((p.payload->>'amount')::numeric)::float8 as charged
                 from wh_events e left join wh_events p on p.stream_id = e.stream_id and p.event_type = 'OrderPaid'
                 where e.stream_id = any($1::uuid[]) group by e.stream_id`,
                [racing]
              )
            )
          )
        )
        expect(rows).toHaveLength(20)
        for (const row of rows) {
          expect(row.after_paid, row.stream_id).toBe(0)
          expect(row.paid, row.stream_id).toBeLessThanOrEqual(1)
          if (row.paid === 1) expect(row.charged, row.stream_id).toBe(row.items)
        }
        expect(rows.some((r) => r.paid === 1)).toBe(true)
      }).pipe(Effect.scoped, Effect.provide(TestDatabase.layer)),
    60_000
  )

  it.live(
    "rejects bad input with 400 and unknown orders with 404",
    () =>
      Effect.gen(function* () {
        const { call } = yield* startApi
        expect((yield* call("POST", "/orders", { customerId: "not-a-uuid" })).status).toBe(400)
        expect((yield* call("POST", "/orders", { nope: 1 })).status).toBe(400)
        expect((yield* call("GET", "/orders/'%3B drop table x")).status).toBe(400)
        expect((yield* call("POST", `/orders/${customerId}/pay`)).status).toBe(404)
      }).pipe(Effect.scoped, Effect.provide(TestDatabase.layer)),
    60_000
  )
})
