import { describe, expect, it } from "@effect/vitest"
import { EventStore } from "@whizbang/core"
import { PgClient } from "@whizbang/postgres"
import { Deferred, Effect, Exit, type Layer, Stream } from "effect"
import { parseDetail } from "../src/internal/processedListener.js"
import { noticeKey } from "../src/internal/servingVersions.js"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as TrackedEventStore from "../src/TrackedEventStore.js"
import * as Orders from "./fixtures/orders.js"
import * as Pipeline from "./fixtures/pipeline.js"
import { uuid } from "./support.js"

// The completion's NOTIFY wh_processed names the events it committed per perspective (after the schema), which is
// what lets a parked wait settle without asking the database.
describe("the completion's wh_processed notification", () => {
  it.live(
    "names every committed event under its perspective; waits for them end Synced",
    () =>
      Effect.gen(function* () {
        const details: Array<string | undefined> = []
        const named = () => {
          const out = new Set<string>()
          for (const d of details) for (const id of parseDetail(d)?.get("order_summary") ?? []) out.add(id)
          return out
        }
        // The NOTIFY may trail the worker's own signal: `allNamed` completes once every expected id was named.
        let expected: ReadonlyArray<string> | undefined
        const allNamed = Deferred.makeUnsafe<void>()
        const check = () => {
          if (expected?.every((id) => named().has(id))) Deferred.doneUnsafe(allNamed, Exit.void)
        }
        yield* Effect.forkScoped(
          Stream.runForEach(PgClient.listen("wh_processed"), (detail) =>
            Effect.sync(() => {
              details.push(detail)
              check()
            })
          )
        )
        const store = yield* TrackedEventStore.make
        const awaiter = yield* Effect.service(PerspectiveSyncAwaiter.PerspectiveSyncAwaiter)
        const [s1, s2] = [uuid(), uuid()]
        const ids = yield* ScopedEventTracker.withScope(
          Effect.gen(function* () {
            const a = yield* store.append(s1!, [Orders.placed(s1!, 1), Orders.placed(s1!, 2)])
            const b = yield* store.append(s2!, [Orders.placed(s2!, 3)])
            const ids = [...a.events, ...b.events].map((e) => e.eventId)
            const result = yield* awaiter.waitForEvents("order_summary", ids, { timeout: "10 seconds" })
            expect(result._tag).toBe("Synced")
            return ids
          })
        )
        expected = ids
        check()
        yield* Deferred.await(allNamed)
        expect([...named()].sort()).toEqual([...ids].sort())
        // Only this service's perspective is named (besides the `@versions` lines its start-up's registration sends,
        // which may come after the LISTEN began).
        for (const d of details) {
          const keys = [...(parseDetail(d)?.keys() ?? [])].filter((key) => key !== noticeKey)
          if (keys.length > 0) expect(keys).toEqual(["order_summary"])
        }
      }).pipe(Effect.scoped, Effect.provide(Pipeline.layer() as Layer.Layer<any>), Effect.timeout("30 seconds")),
    60_000
  )

  it.live(
    "a wait for events this process does not track (applied as if by another instance) ends Synced",
    () =>
      Effect.gen(function* () {
        // Not tracked here: only the database side (the notification's detail, or a sweep) can end the wait.
        const store = yield* EventStore.EventStore
        const awaiter = yield* Effect.service(PerspectiveSyncAwaiter.PerspectiveSyncAwaiter)
        const appended = yield* Effect.forEach(
          Array.from({ length: 300 }, () => uuid()),
          (s) => store.append(s, [Orders.placed(s, 1)]),
          { concurrency: 30 }
        )
        const result = yield* awaiter.waitForEvents(
          "order_summary",
          appended.map((a) => a.events[0]!.eventId),
          { timeout: "20 seconds" }
        )
        expect(result._tag).toBe("Synced")
        expect(result.eventsAwaited).toBe(300)
      }).pipe(Effect.scoped, Effect.provide(Pipeline.layer() as Layer.Layer<any>), Effect.timeout("40 seconds")),
    60_000
  )
})
