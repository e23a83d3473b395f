// An empty claim drops the instance's leases on streams left without work (a claim that raced a stream's last
// completion leaves one), but only when a claim returned streams since the last release: an idle poll is one
// statement, and a lease left behind is still released by the next empty claim.
import { describe, expect, it } from "@effect/vitest"
import { EventId, EventStore, InstanceProvider, WorkCoordinator } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Effect, Layer } from "effect"
import * as Bank from "./fixtures/bank.js"
import { recording } from "./fixtures/recording.js"

const config = { events: Bank.events, perspectives: Bank.perspectives, options: {} }
const request = { instanceId: "", maxStreams: 10, leaseSeconds: 30 }
const releases = (sent: ReadonlyArray<string>) => sent.filter((text) => text.includes("DELETE FROM wh_active_streams")).length

describe("the release of idle leases", () => {
  it.live("runs after an empty claim only when a claim returned streams since the last one", () =>
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const coordinator = yield* WorkCoordinator.WorkCoordinator
      const client = yield* PgClient.PgClient
      const leases = Effect.map(client.query<{ n: number }>("SELECT count(*)::int AS n FROM wh_active_streams"), (r) => r[0]!.n)
      /** A lease on a stream whose work is gone: claimed, then its work rows removed as by a completion that raced it. */
      const leaveLeaseBehind = Effect.gen(function* () {
        const stream = EventId.unsafeMake()
        yield* store.append(stream, [Bank.Deposited.make({ accountId: stream, amount: 1 })])
        const claimed = yield* coordinator.claimWork(request)
        expect(claimed).toEqual([stream])
        yield* client.query("DELETE FROM wh_perspective_events")
      })

      // At start (a predecessor with this instance id may have left leases): the first empty claim releases.
      const first = yield* recording(coordinator.claimWork(request))
      expect(first.result).toEqual([])
      expect(releases(first.sent)).toBe(1)

      yield* leaveLeaseBehind
      expect(yield* leases).toBe(1)
      const afterStreams = yield* recording(coordinator.claimWork(request))
      expect(afterStreams.result).toEqual([])
      expect(releases(afterStreams.sent), "the first empty claim after streams were claimed releases").toBe(1)
      expect(yield* leases).toBe(0)

      const idle = yield* recording(Effect.replicateEffect(coordinator.claimWork(request), 3))
      expect(releases(idle.sent), "idle polls send only their claim").toBe(0)
      // (The claims that found streams also looked at the queue's statistics, in the background, and the append's
      // wake-up of the workers, sent after its commit, may land in this window too.)
      const own = idle.sent.filter(
        (text) => !text.includes("pg_stat_user_tables") && !text.startsWith("ANALYZE") && !text.startsWith("SELECT pg_notify(")
      )
      expect(own.length, own.map((t) => t.slice(0, 60)).join(" | ")).toBe(3)

      // The same again: a claim returning streams re-arms the release.
      yield* leaveLeaseBehind
      const again = yield* recording(coordinator.claimWork(request))
      expect(releases(again.sent)).toBe(1)
      expect(yield* leases).toBe(0)
    }).pipe(
      Effect.provide(PgPerspectivePipeline.layerPorts(config).pipe(Layer.provide(InstanceProvider.layerMemory()), Layer.orDie)),
      Effect.provide(PgTestDatabase.layer({ schema: "bank_idle_leases" }))
    )
  )
})
