// `pnpm --filter @whizbang/dashboard screenshot` (after `pnpm build`): runs a small service through `Whizbang.layer`
// (balances with a v2 being rebuilt over 20,000 events of history, notes with a dead letter, appends going on), opens
// the page in headless Chromium, writes docs/dashboard.png, and measures what one open page costs the database:
// statements per second (every statement of the page's client counted) with appends going on and with none, and the
// page's load time. Needs a PostgreSQL server: WHIZBANG_TEST_DATABASE_URL or DATABASE_URL (a fresh database is
// created on it and dropped afterwards).
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { Duration, Effect, Fiber, Layer, Schema } from "effect"
import pg from "pg"
import { chromium } from "playwright-core"
import { EventDefinition, EventId, EventRegistry, EventStore, Perspective, PgClient, Whizbang } from "whizbang"
import { Dashboard } from "../src/index.js"

const server = process.env.WHIZBANG_TEST_DATABASE_URL ?? process.env.DATABASE_URL
if (server === undefined) throw new Error("set WHIZBANG_TEST_DATABASE_URL or DATABASE_URL to a PostgreSQL server")
const output = fileURLToPath(new URL("../docs/dashboard.png", import.meta.url))
const name = `wb_dashboard_${randomUUID().replaceAll("-", "").slice(0, 12)}`
const url = Object.assign(new URL(server), { pathname: `/${name}` }).toString()
const adminUrl = Object.assign(new URL(server), { pathname: "/postgres" }).toString()
const admin = (sql: string) =>
  Effect.promise(async () => {
    const c = new pg.Client({ connectionString: adminUrl })
    await c.connect()
    await c.query(sql).finally(() => c.end())
  })

const Deposited = EventDefinition.make("Deposited", {
  payload: Schema.Struct({ accountId: Schema.String, amount: Schema.Number, note: Schema.String }),
  streamId: (p) => p.accountId
})
const Ordered = EventDefinition.make("Ordered", {
  payload: Schema.Struct({ orderId: Schema.String, total: Schema.Number }),
  streamId: (p) => p.orderId
})
const model = Schema.Struct({ total: Schema.Number })
const balance = Perspective.make({
  name: "balance",
  events: [Deposited],
  model,
  initial: { total: 0 },
  apply: { Deposited: (m, e) => ({ total: m.total + e.payload.amount }) }
})
const busyFor = (millis: number) => {
  const until = performance.now() + millis
  while (performance.now() < until) {}
}
// Deliberately slow (2 ms per event) so the picture catches it building.
const balanceV2 = Perspective.make({
  name: "balance",
  version: 2,
  events: [Deposited],
  model,
  initial: { total: 0 },
  apply: {
    Deposited: (m, e) => {
      busyFor(2)
      return { total: Math.round((m.total + e.payload.amount) * 100) / 100 }
    }
  }
})
const notes = Perspective.make({
  name: "account_notes",
  events: [Deposited],
  model: Schema.Struct({ last: Schema.String }),
  initial: { last: "" },
  apply: {
    Deposited: (_, e) => {
      if (e.payload.note === "chargeback") throw new Error("chargeback without a matching deposit: cannot apply")
      return { last: e.payload.note }
    }
  }
})
const orders = Perspective.make({
  name: "order_totals",
  events: [Ordered],
  model,
  initial: { total: 0 },
  apply: { Ordered: (m, e) => ({ total: m.total + e.payload.total }) }
})

const config = (perspectives: ReadonlyArray<Perspective.Any>): Whizbang.Config => ({
  databaseUrl: url,
  schema: "shop",
  serviceName: "shop",
  events: EventRegistry.make([Deposited, Ordered]),
  perspectives,
  options: { maxPerspectiveEventAttempts: 2 },
  failureBackoff: { initial: 10, multiplier: 1, max: 10 },
  versions: { autoCutover: false, maxPending: 500 }
})

const append = (id: string, events: ReadonlyArray<unknown>) =>
  Effect.flatMap(Effect.service(EventStore.EventStore), (store) => store.append(id, events as never))

const window = (label: string, millis: number, count: () => number) =>
  Effect.gen(function* () {
    const start = count()
    const from = Date.now()
    yield* Effect.sleep(Duration.millis(millis))
    const seconds = (Date.now() - from) / 1000
    const statements = count() - start
    console.log(`${label}: ${statements} statements in ${seconds.toFixed(1)} s = ${(statements / seconds).toFixed(2)} statements/s`)
  })

const main = Effect.gen(function* () {
  yield* Effect.acquireRelease(admin(`CREATE DATABASE "${name}"`), () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`))
  const accounts = Array.from({ length: 2_000 }, () => EventId.unsafeMake())
  // History, applied by v1 alone.
  yield* Effect.scoped(
    Effect.gen(function* () {
      for (const id of accounts)
        yield* append(
          id,
          Array.from({ length: 10 }, (_, i) => Deposited.make({ accountId: id, amount: i, note: "salary" }))
        )
    }).pipe(Effect.provide(Whizbang.layer(config([balance, notes, orders]))))
  )
  const service = yield* Layer.build(Whizbang.layer(config([balance, balanceV2, notes, orders])))
  const traffic = Effect.gen(function* () {
    const order = EventId.unsafeMake()
    yield* append(order, [Ordered.make({ orderId: order, total: 42 })])
    const account = accounts[Math.floor(Math.random() * accounts.length)]!
    yield* append(account, [Deposited.make({ accountId: account, amount: 5, note: "card" })])
    yield* Effect.sleep(Duration.millis(100))
  }).pipe(Effect.provide(service))
  yield* Effect.provide(append(accounts[0]!, [Deposited.make({ accountId: accounts[0]!, amount: -40, note: "chargeback" })]), service)

  // The page, on a client whose statements are counted.
  let statements = 0
  const counted = yield* Layer.build(
    Layer.effect(
      PgClient.PgClient,
      Effect.map(PgClient.make({ url, schema: "shop", maxConnections: 2, applicationName: "whizbang-dashboard" }), (client) =>
        PgClient.PgClient.of({
          ...client,
          query: (...args: Parameters<typeof client.query>) => {
            statements++
            return client.query(...args)
          }
        })
      )
    )
  )
  const running = yield* Dashboard.serve({ allowActions: true }).pipe(Effect.provide(counted))
  console.log(`serving ${running.url}`)

  const profile = mkdtempSync(Path.join(Os.tmpdir(), "whizbang-dashboard-shot-"))
  const context = yield* Effect.acquireRelease(
    Effect.promise(() =>
      chromium.launchPersistentContext(profile, {
        executablePath: "/usr/bin/chromium",
        headless: true,
        viewport: { width: 1440, height: 1000 },
        deviceScaleFactor: 1,
        args: [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync"
        ]
      })
    ),
    (c) => Effect.promise(() => c.close().then(() => rmSync(profile, { recursive: true, force: true })))
  )
  const page = yield* Effect.promise(() => context.newPage())
  yield* Effect.promise(() => page.goto(running.url))
  // A realistic moment: v2 rebuilding, a dead letter, a few samples in the sparklines.
  yield* Effect.promise(() => page.locator('tr[data-version="balance__v2"][data-state="building"]').waitFor({ timeout: 30_000 }))
  yield* Effect.promise(() => page.locator("#dead-letters tr[data-dead-letter]").waitFor({ timeout: 30_000 }))
  const appending = yield* Effect.forkScoped(Effect.forever(traffic))
  const early = [0, 1, 2, 3, 4].map((r) => `:not([data-revision="${r}"])`).join("")
  yield* Effect.promise(() => page.locator(`#live${early}`).waitFor({ timeout: 30_000 }))
  yield* Effect.promise(() => page.screenshot({ path: output, fullPage: true }))
  console.log(`wrote ${output}`)
  yield* window("one open page, v2 rebuilding and 20 appends/s", 20_000, () => statements)
  yield* Fiber.interrupt(appending)
  yield* Effect.promise(() => page.locator('tr[data-version="balance__v2"] td', { hasText: "100%" }).waitFor({ timeout: 300_000 }))
  yield* window("one open page, quiet (no appends, nothing building)", 30_000, () => statements)
  const loads: Array<number> = []
  for (let i = 0; i < 5; i++) {
    const from = Date.now()
    yield* Effect.promise(() => page.goto(running.url))
    const dom = yield* Effect.promise(() => page.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"))
    yield* Effect.promise(() => page.locator('#live:not([data-revision="0"])').waitFor({ timeout: 20_000 }))
    loads.push(Date.now() - from)
    console.log(`load ${i + 1}: DOMContentLoaded ${Math.round(Number(dom))} ms, first live update ${loads[i]} ms after navigation started`)
  }
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
