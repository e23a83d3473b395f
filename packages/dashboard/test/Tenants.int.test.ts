// The tenants page: every tenant of the catalog with its pending work, lag and dead letters, read from the service
// schema's catalog also when the page shows a tenant's schema; bounded to the worst `top`, with totals.
import { describe, expect, it } from "@effect/vitest"
import { PgClient, PgTenants } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Effect } from "effect"
import { Dashboard } from "../src/index.js"

const database = PgTestDatabase.layer({ schema: "saas", maxConnections: 4 })

const get = (url: string) => Effect.promise(() => fetch(url).then(async (r) => ({ status: r.status, text: await r.text() })))

describe("the tenants page", () => {
  it.live("lists the worst tenants by lag with their dead letters and the totals; a page without the option has none", () =>
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const catalog = yield* PgTenants.make(yield* PgTenants.decodeOptions(undefined, "saas"))
      for (const id of ["acme", "globex", "initech"]) yield* catalog.add(id)
      const acme = client.forSchema("tenant_acme")
      yield* acme.query(
        `insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, created_at)
         values (gen_random_uuid(), gen_random_uuid(), 'balance', gen_random_uuid(), 0, now() - interval '10 minutes')`
      )
      yield* client.forSchema("tenant_globex").query(
        `insert into wh_dead_letters (work_id, stream_id, perspective_name, event_id, event_type, payload, error, attempts)
           values (gen_random_uuid(), gen_random_uuid(), 'balance', gen_random_uuid(), 'Deposited', '{}', 'boom', 3)`
      )

      // The page of tenant acme's schema still lists the service's tenants.
      const running = yield* Dashboard.serve({ tenants: { serviceSchema: "saas", top: 2 } }).pipe(
        Effect.provideService(PgClient.PgClient, acme)
      )
      const page = yield* get(`${running.url}tenants`)
      expect(page.status).toBe(200)
      expect(page.text).toContain("schema <b>tenant_acme</b>")
      expect(page.text).toMatch(/<h2>Tenants <span class="n">4<\/span><\/h2>/)
      expect(page.text).toMatch(/4 active — 1 pending in 1 tenant\(s\), max lag 10m \d+s, 1 dead letter\(s\) — the worst 2 by lag below/)
      const rows = [...page.text.matchAll(/<tr data-tenant="(\w+)">(.*?)<\/tr>/gs)].map((m) => [m[1], m[2]!.replace(/<[^>]+>/g, "|")])
      expect(rows.map(([id]) => id)).toEqual(["acme", "globex"])
      expect(rows[0]![1]).toMatch(/\|tenant_acme\|.*\|1\|.*\|10m \d+s\|.*\|0\|/)
      expect(rows[1]![1]).toMatch(/\|tenant_globex\|.*\|0\|.*\|-\|.*\|1\|/)

      const without = yield* Dashboard.serve({})
      expect((yield* get(`${without.url}tenants`)).status).toBe(404)
      expect((yield* get(running.url)).text).toContain('href="/tenants">tenants</a>')
    }).pipe(Effect.provide(database), Effect.scoped)
  )
})
