import { describe, expect, it } from "@effect/vitest"
import { InstanceProvider } from "@whizbang/core"
import { Effect } from "effect"
import { PgClient } from "../src/PgClient.js"
import * as PgLifecycleStore from "../src/PgLifecycleStore.js"
import * as PgPerspectiveStore from "../src/PgPerspectiveStore.js"
import * as PgWorkCoordinator from "../src/PgWorkCoordinator.js"
import * as PostgresError from "../src/PostgresError.js"

// A client whose every statement fails the way a dropped connection does.
const lost = new PostgresError.PostgresError({
  reason: new PostgresError.ConnectionError({ code: "ECONNRESET" }),
  message: "Connection terminated unexpectedly"
})
const failing = {
  query: () => Effect.fail(lost),
  withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => effect
} as unknown as PgClient["Service"]

describe("port errors keep PostgresError's reason union", () => {
  it.effect("the coordinator, the perspective store and the lifecycle store carry the classified reason, not its text", () =>
    Effect.gen(function* () {
      const coordinator = yield* PgWorkCoordinator.make()
      const claim = yield* Effect.flip(coordinator.claimWork({ maxStreams: 1 } as never))
      expect(claim._tag).toBe("WorkCoordinatorError")
      expect(claim.reason).toEqual(new PostgresError.ConnectionError({ code: "ECONNRESET" }))
      expect(claim.message).toBe("claimWork failed: Connection terminated unexpectedly")

      const store = yield* PgPerspectiveStore.make
      const read = yield* Effect.flip(store.query("balance"))
      expect(read).toMatchObject({ _tag: "PerspectiveStoreError", reason: { _tag: "ConnectionError" } })
      const badName = yield* Effect.flip(store.query("Bad-Name"))
      expect(badName.reason._tag).toBe("InvalidRequest")

      const lifecycle = yield* PgLifecycleStore.make
      const claimed = yield* Effect.flip(lifecycle.complete(["x"]))
      expect(claimed).toMatchObject({ _tag: "LifecycleStoreError", reason: { _tag: "ConnectionError", code: "ECONNRESET" } })
    }).pipe(Effect.provideService(PgClient, failing), Effect.provide(InstanceProvider.layerMemory()))
  )
})
