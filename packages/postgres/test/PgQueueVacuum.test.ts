import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import type { Shape } from "../src/PgClient.js"
import { PostgresError, Unknown } from "../src/PostgresError.js"
import * as PgQueueVacuum from "../src/PgQueueVacuum.js"

/** A client whose every statement is recorded and waits for `release` (so a running vacuum stays running). */
const fakeClient = Effect.gen(function* () {
  const statements: Array<string> = []
  const release = yield* Deferred.make<void>()
  const started = yield* Deferred.make<void>()
  const client = {
    query: (sql: string) =>
      Effect.gen(function* () {
        statements.push(sql)
        yield* Deferred.succeed(started, undefined)
        yield* Deferred.await(release)
        return []
      })
  } as unknown as Shape
  return { client, statements, release, started }
})

describe("PgQueueVacuum", () => {
  it.effect("decode: the default, false (off), and a typed error for a bad everyRows or shape", () =>
    Effect.gen(function* () {
      expect(yield* PgQueueVacuum.decode(undefined)).toBe(100_000)
      expect(yield* PgQueueVacuum.decode({})).toBe(100_000)
      expect(yield* PgQueueVacuum.decode({ everyRows: 5 })).toBe(5)
      expect(yield* PgQueueVacuum.decode(false)).toBeNull()
      for (const bad of [{ everyRows: 0 }, { everyRows: -1 }, { everyRows: 1.5 }, { everyRows: Number.NaN }]) {
        const error = yield* Effect.flip(PgQueueVacuum.decode(bad))
        expect(error.option).toBe("queueVacuum.everyRows")
        expect(error.message).toMatch(/positive integer/)
      }
      const error = yield* Effect.flip(PgQueueVacuum.decode(true as unknown as PgQueueVacuum.Input))
      expect(error.option).toBe("queueVacuum")
    })
  )

  it.effect("vacuums once everyRows were removed, one at a time, counting again from zero", () =>
    Effect.gen(function* () {
      const { client, statements, release, started } = yield* fakeClient
      const vacuum = PgQueueVacuum.make(client, 10)
      yield* vacuum.removed(9)
      expect(statements).toEqual([])
      yield* vacuum.removed(1)
      yield* Deferred.await(started)
      expect(statements).toEqual([PgQueueVacuum.statement])
      // While it runs, no second one starts, however many rows are removed.
      yield* vacuum.removed(100)
      yield* Effect.yieldNow
      expect(statements).toHaveLength(1)
      yield* Deferred.succeed(release, undefined)
    })
  )

  it.effect("coordinators on one pool (a process's tenants) run one vacuum at a time between them", () =>
    Effect.gen(function* () {
      const { client, statements, release, started } = yield* fakeClient
      const pool = {}
      const tenantA = PgQueueVacuum.make({ ...client, query: client.query, pool } as unknown as Shape, 10)
      const tenantB = PgQueueVacuum.make({ ...client, query: client.query, pool } as unknown as Shape, 10)
      const elsewhere = PgQueueVacuum.make({ ...client, query: client.query, pool: {} } as unknown as Shape, 10)
      yield* tenantA.removed(10)
      yield* Deferred.await(started)
      yield* tenantB.removed(10)
      yield* Effect.yieldNow
      expect(statements, "B waits while A's vacuum runs on their pool").toHaveLength(1)
      yield* elsewhere.removed(10)
      yield* Effect.yieldNow
      expect(statements, "another pool's coordinator is not held back").toHaveLength(2)
      yield* Deferred.succeed(release, undefined)
      // B kept its count: a completion after A's vacuum ended starts B's (A's ends once its fiber has run).
      for (let i = 0; i < 50 && statements.length < 3; i++) {
        yield* Effect.yieldNow
        yield* tenantB.removed(0)
      }
      expect(statements).toHaveLength(3)
    })
  )

  it.effect("off (null): never a statement", () =>
    Effect.gen(function* () {
      const { client, statements } = yield* fakeClient
      const vacuum = PgQueueVacuum.make(client, null)
      yield* vacuum.removed(Number.MAX_SAFE_INTEGER)
      yield* Effect.yieldNow
      expect(statements).toEqual([])
    })
  )

  it.effect("a failed vacuum is logged and the next one runs after the next everyRows", () =>
    Effect.gen(function* () {
      const calls: Array<string> = []
      const done = yield* Deferred.make<void>()
      const client = {
        query: (sql: string) =>
          Effect.suspend(() => {
            calls.push(sql)
            return calls.length === 1
              ? Effect.fail(new PostgresError({ reason: new Unknown({ code: "42501" }), message: "permission denied" }))
              : Effect.as(Deferred.succeed(done, undefined), [])
          })
      } as unknown as Shape
      const vacuum = PgQueueVacuum.make(client, 3)
      yield* vacuum.removed(3)
      // The failed one ends (its fiber logs a warning); then 3 more rows start the next.
      yield* Effect.repeat(
        Effect.sync(() => calls.length),
        { until: (n) => n === 1 }
      )
      const retry = yield* Effect.forkChild(Effect.repeat(vacuum.removed(3), { until: () => calls.length === 2 }))
      yield* Fiber.join(retry)
      yield* Deferred.await(done)
      expect(calls).toEqual([PgQueueVacuum.statement, PgQueueVacuum.statement])
    })
  )
})
