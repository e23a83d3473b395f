// The operations page in a real browser (headless Chromium from Debian, driven by playwright-core) against a service
// composed through `Whizbang.layer`: v2 of a perspective building then live (cut over from the page), lag moving
// without a reload, a dead letter appearing and retried from the page with the token (refused without it and with a
// wrong one), unknown ids, HTML in payloads and errors shown as text (no injected script runs), and the database
// going away and coming back. Every wait is a page condition with a deadline, never a sleep.
import { describe, expect, it } from "@effect/vitest"
import { Dashboard } from "@whizbang/dashboard"
import { TestDatabase } from "@whizbang/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import type { Page } from "playwright-core"
import { EventId, EventStore, PerspectiveWorker, PgClient, Whizbang } from "whizbang"
import * as Shop from "./fixtures/shop.js"
import { admin, browser, chromiumAvailable, databaseOf } from "./support.js"

const available = chromiumAvailable()
const token = "test-token-0123456789abcdef"
const deadline = { timeout: 20_000 }

const pw = <A>(f: () => Promise<A>) => Effect.promise(f)

const sql = <Row extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<Row>(text, params)).pipe(Effect.orDie)

/** Until the worker is idle and no work row is left. */
const settle = Effect.gen(function* () {
  for (let round = 0; round < 400; round++) {
    yield* PerspectiveWorker.awaitIdle
    const [left] = yield* sql<{ n: number }>("SELECT count(*)::int AS n FROM wh_perspective_events")
    if (left!.n === 0) return
  }
  return yield* Effect.die(new Error("work still pending after 400 idle rounds"))
})

const append = (streams: ReadonlyArray<string>, perStream: number, note = "ok") =>
  Effect.forEach(streams, (id) =>
    Effect.flatMap(Effect.service(EventStore.EventStore), (store) =>
      store.append(
        id,
        Array.from({ length: perStream }, (_, i) => Shop.deposit(id, i + 0.5, note))
      )
    )
  )

/** Builds a layer into a scope of its own, closed by the returned effect. */
const start = <A, E>(layer: Layer.Layer<A, E>) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    // Also closed with the test, whatever happens.
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const context = yield* Layer.buildWithScope(layer, scope).pipe(Effect.orDie)
    return { context, stop: Scope.close(scope, Exit.void) }
  })

const text = (page: Page, selector: string) => pw(async () => (await page.locator(selector).first().textContent()) ?? "")

describe.skipIf(!available)("the operations page in a browser", () => {
  it.live(
    "building then live, lag without a reload, a dead letter retried with the token only, 404s, escaped HTML, a database outage",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const streams = Array.from({ length: 40 }, () => EventId.unsafeMake())

        // 1. The service with balance v1 and notes, and a history.
        const v1 = yield* start(Whizbang.layer(Shop.config(url, [Shop.balance, Shop.notesPerspective])))
        yield* Effect.gen(function* () {
          yield* append(streams, 5)
          yield* settle
        }).pipe(Effect.provide(v1.context))

        // 2. The page, as `whizbang dashboard --allow-actions` serves it (its own pool, like the CLI's).
        const dashboardClient = yield* Layer.build(
          PgClient.layer({ url, schema: "shop", maxConnections: 2, applicationName: "whizbang-dashboard" })
        ).pipe(Effect.orDie)
        const running = yield* Dashboard.serve({
          allowActions: true,
          token,
          basePath: "/ops/whizbang",
          refreshInterval: "200 millis",
          slowRefreshInterval: "1 second"
        }).pipe(Effect.provide(dashboardClient))
        expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ops\/whizbang\/$/)

        const { context } = yield* browser
        const page = yield* pw(() => context.newPage())
        const started = Date.now()
        yield* pw(() => page.goto(running.url))
        yield* pw(() => page.locator('#live[data-revision]:not([data-revision="0"])').waitFor(deadline))
        const firstUpdateMillis = Date.now() - started
        const domContentLoadedMillis = yield* pw(() =>
          page.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
        )
        console.log(
          `page load: DOMContentLoaded ${Math.round(Number(domContentLoadedMillis))} ms, first live update ${firstUpdateMillis} ms`
        )
        // A marker that a reload would lose.
        yield* pw(() => page.evaluate("window.__notReloaded = true"))
        yield* pw(() => page.locator('tr[data-version="balance"][data-state="live"]').waitFor(deadline))

        // 3. Lag without a reload: events appended while no worker runs show as lag, then drain once v2's deploy starts.
        yield* v1.stop
        const writer = yield* start(Whizbang.layerWithoutWorker(Shop.config(url, [Shop.balance, Shop.notesPerspective])))
        yield* append(streams.slice(0, 10), 3).pipe(Effect.provide(writer.context))
        yield* pw(() => page.locator('tr[data-perspective="balance"] [data-field="lag-events"]', { hasText: /^30$/ }).waitFor(deadline))
        yield* writer.stop

        // 4. The deploy with v2 over the existing history: building (no automatic cutover), then cut over from the page.
        const v2 = yield* start(Whizbang.layer(Shop.config(url, [Shop.balance, Shop.balanceV2, Shop.notesPerspective])))
        yield* pw(() => page.locator('tr[data-version="balance__v2"][data-state="building"]').waitFor(deadline))
        yield* pw(() => page.locator('tr[data-perspective="balance"] [data-field="lag-events"]', { hasText: /^0$/ }).waitFor(deadline))
        expect(yield* pw(() => page.evaluate("window.__notReloaded === true"))).toBe(true)
        yield* Effect.provide(settle, v2.context)
        yield* pw(() => page.locator('tr[data-version="balance__v2"] a', { hasText: "cut over" }).click())
        expect(yield* text(page, "#explanation")).toContain("switches reads of balance to it in one transaction")
        yield* pw(() => page.fill('input[name="token"]', token))
        yield* pw(() => page.locator("form.confirm button").click())
        yield* pw(() => page.locator('#outcome[data-ok="yes"]').waitFor(deadline))
        yield* pw(() => page.locator("a", { hasText: "back to the overview" }).click())
        yield* pw(() => page.locator('tr[data-version="balance__v2"][data-state="live"]').waitFor(deadline))
        yield* pw(() => page.locator('tr[data-version="balance"][data-state="retiring"]').waitFor(deadline))
        yield* pw(() => page.evaluate("window.__notReloaded = true"))

        // 5. A dead letter whose payload and error carry HTML appears by itself.
        const xssNote = 'reject <script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
        const victim = streams[0]!
        yield* Effect.provide(append([victim], 1, xssNote), v2.context)
        const row = page.locator("#dead-letters tr[data-dead-letter]")
        yield* pw(() => row.first().waitFor(deadline))
        expect(yield* pw(() => page.evaluate("window.__notReloaded === true"))).toBe(true)
        expect(yield* text(page, "#dead-letters tr[data-dead-letter] td.wrap")).toContain(Shop.errorWithHtml)
        const letterId = (yield* pw(() => row.first().getAttribute("data-dead-letter")))!

        // Its page: payload and error as text; no injected script or handler ran.
        yield* pw(() => row.first().locator("a").first().click())
        expect(yield* text(page, "#payload")).toContain(xssNote.replaceAll('"', '\\"'))
        expect(yield* text(page, "#error")).toContain(Shop.errorWithHtml)
        expect(yield* pw(() => page.locator("#payload script, #payload img, #error img, #dead-letters img").count())).toBe(0)

        // 6. Retry: refused without a token and with a wrong one (nothing changes), done with the right one.
        const confirmRetry = Effect.gen(function* () {
          yield* pw(() => page.goto(`${running.url}dead-letters/${letterId}/retry`))
          expect(yield* text(page, "#explanation")).toContain("back into the work queue of perspective notes")
        })
        yield* confirmRetry
        yield* pw(() => page.locator("form.confirm button").click())
        expect(yield* text(page, "#outcome #message")).toBe(
          "refused: no token given (the form's token field, or the x-whizbang-token header)"
        )
        yield* confirmRetry
        yield* pw(() => page.fill('input[name="token"]', `${token}-wrong`))
        yield* pw(() => page.locator("form.confirm button").click())
        expect(yield* text(page, "#outcome #message")).toBe("refused: wrong token")
        const [stillThere] = yield* Effect.provide(sql<{ n: number }>("SELECT count(*)::int AS n FROM wh_dead_letters"), v2.context)
        expect(stillThere!.n).toBe(1)
        Shop.notes.reject = false
        yield* confirmRetry
        yield* pw(() => page.fill('input[name="token"]', token))
        yield* pw(() => page.locator("form.confirm button").click())
        yield* pw(() => page.locator('#outcome[data-ok="yes"]').waitFor(deadline))
        yield* pw(() => page.goto(running.url))
        yield* pw(() => page.locator("#dead-letters .empty").waitFor(deadline))
        const actions = yield* pw(() =>
          page.locator("#actions tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-outcome")))
        )
        expect(actions).toEqual(["done", "refused", "refused", "done"])
        expect(yield* text(page, "#actions tbody tr")).toContain("HeadlessChrome")

        // 7. Unknown ids: a clear 404.
        const unknown = yield* pw(() => page.goto(`${running.url}dead-letters/0193a1c2-7f10-7000-8000-000000000001`))
        expect(unknown?.status()).toBe(404)
        expect(yield* text(page, "#message")).toContain("No dead letter 0193a1c2-7f10-7000-8000-000000000001")
        const version = yield* pw(() => page.goto(`${running.url}versions/balance__v9/cutover`))
        expect(version?.status()).toBe(404)
        expect(yield* text(page, "#message")).toBe("no perspective version balance__v9")
        expect(yield* pw(() => page.evaluate("[typeof window.__xss, typeof window.__xssError]"))).toEqual(["undefined", "undefined"])

        // 8. The database goes away (the page's connections end and no new one is allowed), then comes back.
        yield* pw(() => page.goto(running.url))
        yield* pw(() => page.locator('#live[data-revision]:not([data-revision="0"])').waitFor(deadline))
        yield* pw(() => page.evaluate("window.__notReloaded = true"))
        const database = databaseOf(url)
        yield* Effect.acquireUseRelease(
          admin(url, `ALTER DATABASE "${database}" ALLOW_CONNECTIONS false`),
          () =>
            Effect.gen(function* () {
              yield* admin(
                url,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'whizbang-dashboard'",
                [database]
              )
              yield* pw(() => page.locator("#banner", { hasText: "Database unavailable since" }).waitFor(deadline))
            }),
          () => admin(url, `ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`)
        )
        yield* pw(() => page.locator("#banner").waitFor({ ...deadline, state: "detached" }))
        yield* pw(() => page.locator('tr[data-version="balance__v2"][data-state="live"]').waitFor(deadline))
        expect(yield* pw(() => page.evaluate("window.__notReloaded === true"))).toBe(true)

        // 9. One computation serves every open page, at most once per refresh interval (200 ms here) however busy.
        const second = yield* pw(() => context.newPage())
        yield* pw(() => second.goto(running.url))
        yield* pw(() => second.locator('#live[data-revision]:not([data-revision="0"])').waitFor(deadline))
        const computations = Effect.map(
          pw(() => fetch(`${running.url}snapshot.json`).then((r) => r.json() as Promise<{ computations: number }>)),
          (j) => j.computations
        )
        const before = yield* computations
        const from = Date.now()
        yield* Effect.provide(
          Effect.gen(function* () {
            while (Date.now() - from < 3_000) yield* append([streams[1]!], 1)
          }),
          v2.context
        )
        const elapsed = Date.now() - from
        const done = (yield* computations) - before
        console.log(`busy: ${done} computations in ${elapsed} ms with two pages open`)
        expect(done).toBeGreaterThan(0)
        expect(done).toBeLessThanOrEqual(Math.ceil(elapsed / 200) + 1)
        yield* v2.stop
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )
})
