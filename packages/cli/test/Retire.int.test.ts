// `whizbang retire`: a perspective removed from the code stays registered, so appends keep routing its events to it
// and its work waits forever. Retiring it stops the routing and drops that work; one a live instance still runs is
// refused unless --force; an unknown name names the registered ones.
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { EventDefinition, EventRegistry } from "@whizbang/core"
import { PgClient, PgEventStore, PgPerspectiveVersions } from "@whizbang/postgres"
import { PgTestDatabase, TestDatabase } from "@whizbang/testing"
import { Effect, Schema } from "effect"
import { runInProcess } from "./fixtures/runInProcess.js"

const Deposited = EventDefinition.make("Deposited", {
  payload: Schema.Struct({ accountId: Schema.String, amount: Schema.Number }),
  streamId: (p) => p.accountId
})
const Audited = EventDefinition.make("Audited", { payload: Schema.Struct({ accountId: Schema.String }), streamId: (p) => p.accountId })

const sql = (text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<Record<string, unknown>>(text, params))

const workOf = (perspective: string) =>
  Effect.map(sql("select count(*)::int as n from wh_perspective_events where perspective_name = $1", [perspective]), (r) => r[0]!.n)

/** Appends through the event store: the append routes each event to every registered version that handles it. */
const append = Effect.gen(function* () {
  const store = yield* PgEventStore.make({ registry: EventRegistry.make([Deposited, Audited]) })
  const id = randomUUID()
  yield* store.append(id, [Deposited.make({ accountId: id, amount: 1 }), Audited.make({ accountId: id })])
})

const run = (...args: ReadonlyArray<string>) =>
  Effect.flatMap(Effect.service(TestDatabase.TestDatabase), ({ url }) => runInProcess(["--database-url", url, "--schema", "bank", ...args]))

describe("whizbang retire", () => {
  it.live("stops routing to a perspective removed from the code and drops its work; refuses one a live instance runs", () =>
    Effect.gen(function* () {
      // An older release ran `balance` and `audit`; the one running now runs `balance` only.
      yield* PgPerspectiveVersions.register([
        { name: "balance", baseName: "balance", version: 1, eventTypes: ["Deposited"] },
        { name: "audit", baseName: "audit", version: 1, eventTypes: ["Audited"] }
      ])
      yield* sql(
        `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at, perspective_names)
         values (gen_random_uuid(), 'bank', 'web-1', 7, now(), '{balance}')`
      )
      yield* append
      yield* append
      expect(yield* workOf("audit")).toBe(2)

      const unknown = yield* run("retire", "audits", "--yes")
      expect(unknown.code).toBe(3)
      expect(unknown.stderr).toContain('perspective "audits" is not registered (registered: audit, balance)')

      const retired = yield* run("retire", "audit", "--yes")
      expect(retired.code).toBe(0)
      expect(retired.stdout).toContain("retired audit (2 pending work row(s) dropped)")
      expect(yield* workOf("audit")).toBe(0)
      // Appends no longer route its events to it; the live perspective still gets its own.
      yield* append
      expect(yield* workOf("audit")).toBe(0)
      expect(yield* workOf("balance")).toBe(3)
      expect((yield* PgPerspectiveVersions.list).map((v) => [v.perspectiveName, v.state])).toEqual([
        ["audit", "retired"],
        ["balance", "live"]
      ])
      const again = yield* run("retire", "audit", "--yes")
      expect([again.code, again.stdout.trim()]).toEqual([0, "audit: already retired, nothing to do"])

      // A live instance runs balance: refused (exit 4), nothing changed; --force retires it.
      const running = yield* run("retire", "balance", "--yes")
      expect(running.code).toBe(4)
      expect(running.stderr).toContain("balance is run by 1 live instance(s)")
      expect(yield* workOf("balance")).toBe(3)
      const forced = yield* run("retire", "balance", "--force", "--yes", "--json")
      expect(forced.code).toBe(0)
      expect(forced.json()).toEqual([{ perspectiveName: "balance", dropped: 3, unplanned: 0 }])
    }).pipe(Effect.provide(PgTestDatabase.layer({ schema: "bank", maxConnections: 4 })))
  )
})
