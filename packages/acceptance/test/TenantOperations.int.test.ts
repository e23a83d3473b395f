// Operator commands on a tenant no worker process is holding (issue #39). A tenant fleet finds work only through
// notifications (it never polls an idle tenant), so a command that gives a tenant's workers something to do must
// wake them: `whizbang rebuild --tenant` (history planned for the replay, or work rows for some event types) is
// applied by a tenant worker process that had let the tenant go. Composed from `whizbang` (a write-only tenant
// service, a tenant worker process) and the `whizbang` CLI.
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Effect, Layer } from "effect"
import { EventStore, PgClient, Tenants, Whizbang } from "whizbang"
import * as Domain from "./support/domain.js"
import * as TenantWorkers from "./support/tenantWorkers.js"
import * as Writer from "./support/writer.js"

const root = fileURLToPath(new URL("../../..", import.meta.url))
const schema = "saas_ops"

const writer = (url: string) =>
  Layer.unwrap(
    Effect.map(Domain.definitions, ({ events, perspectives }) =>
      Whizbang.layerTenants({
        databaseUrl: url,
        schema,
        serviceName: "acceptance-tenant-operator",
        events,
        perspectives,
        options: Domain.options,
        watchdog: { interval: null },
        tenants: { serve: [] }
      })
    )
  )

/** The `whizbang` CLI (its source, through tsx) against the test database; its stdout. */
const cli = (url: string, ...args: ReadonlyArray<string>) =>
  Effect.callback<string, Error>((resume) => {
    execFile(
      Path.join(root, "node_modules/.bin/tsx"),
      [Path.join(root, "packages/cli/src/bin.ts"), "--schema", schema, ...args],
      { cwd: root, env: { ...process.env, DATABASE_URL: url, NO_COLOR: "1" }, timeout: 60_000 },
      (error, stdout, stderr) => resume(error ? Effect.fail(new Error(`${error.message}\n${stderr}`)) : Effect.succeed(stdout))
    )
  })

/** What is left to apply in a tenant, and its read models against their folds, read on its schema (no tenant held). */
const tenantState = (tenantId: string) =>
  Effect.gen(function* () {
    const client = (yield* PgClient.PgClient).forSchema(`tenant_${tenantId}`)
    const inTenant = <A, E>(effect: Effect.Effect<A, E, PgClient.PgClient>) => Effect.provideService(effect, PgClient.PgClient, client)
    const { work } = yield* inTenant(Writer.counts)
    return { work, balance: yield* inTenant(Writer.mismatches("balance")), activity: yield* inTenant(Writer.mismatches("activity")) }
  })

const settled = { work: 0, balance: 0, activity: 0 }

/** The tenant worker processes' service name (`support/tenantWorker.ts`). */
const workerServiceName = "acceptance-tenant-worker"

/** Polls `check` until it holds, for at most `seconds`; fails with the last value otherwise. */
const eventually = <A, E, R>(what: string, value: Effect.Effect<A, E, R>, check: (a: A) => boolean, seconds: number) =>
  Effect.gen(function* () {
    const deadline = Date.now() + seconds * 1_000
    while (true) {
      const current = yield* value
      if (check(current)) return current
      if (Date.now() > deadline) return yield* Effect.fail(new Error(`${what}: still ${JSON.stringify(current)} after ${seconds} s`))
      yield* Effect.sleep("200 millis")
    }
  })

describe("operator commands on a tenant the fleet is not holding", () => {
  it.live(
    "`whizbang rebuild --tenant` wakes the tenant's fleet: the history replayed (every type) or the work rows applied (some types), folds exact",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { url } = yield* TestDatabase.TestDatabase
          yield* Effect.gen(function* () {
            yield* Tenants.add("acme")
            yield* Tenants.add("globex")
            yield* TenantWorkers.start({ url, schema })
            for (const tenantId of ["acme", "globex"]) {
              yield* Tenants.run(
                tenantId,
                Effect.forEach(
                  Writer.streams(4),
                  (accountId) =>
                    Effect.flatMap(EventStore.EventStore, (store) =>
                      store.append(
                        accountId,
                        Array.from({ length: 5 }, (_, i) => Domain.Deposited.make({ accountId, amount: i + 1, tag: `${tenantId}.${i}` }))
                      )
                    ),
                  { discard: true }
                )
              )
            }
            const both = Effect.all([tenantState("acme"), tenantState("globex")])
            yield* eventually("applied", both, (s) => s.every((t) => JSON.stringify(t) === JSON.stringify(settled)), 60)
            // Let go: the worker process stopped both tenants' services (each deregisters its instance in the
            // tenant's schema when it stops), so nothing of it runs there until something wakes the tenant.
            const workerInstances = Effect.flatMap(PgClient.PgClient, (client) =>
              client.query<{ n: number }>(
                `SELECT (SELECT count(*) FROM tenant_acme.wh_service_instances WHERE service_name = $1)
                      + (SELECT count(*) FROM tenant_globex.wh_service_instances WHERE service_name = $1) AS n`,
                [workerServiceName]
              )
            )
            yield* eventually("let go", workerInstances, ([row]) => Number(row!.n) === 0, 60)

            // Every type balance handles: its history is planned for the replay. Some of activity's: work rows.
            const replayed = JSON.parse(yield* cli(url, "rebuild", "balance", "--tenant", "acme", "--yes", "--json"))
            expect(replayed).toEqual({ perspective: "balance", streams: 4, enqueued: 0, planned: 20 })
            const enqueued = JSON.parse(yield* cli(url, "rebuild", "activity", "-t", "Deposited", "--tenant", "globex", "--yes", "--json"))
            expect(enqueued).toEqual({ perspective: "activity", streams: 4, enqueued: 20 })

            // Nothing but the commands' notifications tells the worker process: it applies both.
            const after = yield* eventually("rebuilt", both, (s) => s.every((t) => JSON.stringify(t) === JSON.stringify(settled)), 60)
            expect(after).toEqual([settled, settled])
          }).pipe(Effect.provide(writer(url)))
        })
      ).pipe(Effect.provide(TestDatabase.layer)),
    180_000
  )
})
