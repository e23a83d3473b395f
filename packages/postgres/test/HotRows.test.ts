// The hot statements decode their rows too (src/internal/operation.ts): a claim's rows are checked against the
// claim-and-fetch row schema without being copied, their jsonb payloads are not looked into, and a row of another
// shape is a PostgresError whose reason, UnexpectedRow, names the statement. A client that returns given rows stands
// in for Postgres.
import { describe, expect, it } from "@effect/vitest"
import type { PgClient } from "@whizbang/postgres"
import { Effect } from "effect"
import * as Claim from "../src/sql/claimWork.js"
import * as AppendSql from "../src/sql/appendEvents.js"
import * as ReadSql from "../src/sql/readStream.js"

const returning = (rows: ReadonlyArray<unknown>) => ({ query: () => Effect.succeed(rows) }) as unknown as PgClient.Shape

const request: Parameters<typeof Claim.claimAndFetch>[1] = {
  instanceId: "0190a1b2-0000-7000-8000-000000000001",
  maxStreams: 10,
  leaseSeconds: 300,
  staleSeconds: 30,
  graceMillis: 3000,
  exclude: [],
  perspectiveNames: null,
  heads: 4,
  limit: 100,
  backgroundLimit: 100,
  modelsOf: undefined,
  background: true
}

const claimed = { part: 0, stream_id: "0190a1b2-0000-7000-8000-0000000000aa", claim_order: 1 }
const fetched = {
  part: 1,
  stream_id: "0190a1b2-0000-7000-8000-0000000000aa",
  claim_order: null,
  work_id: "0190a1b2-0000-7000-8000-0000000000b1",
  perspective_name: "balance",
  event_id: "0190a1b2-0000-7000-8000-0000000000c1",
  attempts: 0,
  cursor_last_event_id: null,
  fires: true,
  blocked: false,
  rewind_required: false,
  event_first: true,
  more: false,
  event_type: "Deposited",
  payload: { amount: 5, nested: [{ any: "shape" }] },
  metadata: { correlationId: "c", causationId: null, timestamp: "2025-01-01T00:00:00.000Z" },
  scope: null,
  stream_version: 1,
  model: null
}

describe("rows of the hot statements", () => {
  it.effect("a claim's rows decode as they came: claimed streams and fetched rows, payloads not looked into", () =>
    Effect.gen(function* () {
      const rows = [claimed, fetched]
      const decoded = yield* Claim.claimAndFetch(returning(rows), request)
      expect(decoded).toStrictEqual(rows)
      // Named as their columns: checked, not copied.
      expect(decoded[0]).toBe(claimed)
      expect(decoded[1]).toBe(fetched)
    })
  )

  it.effect("a fetched row of another shape is a PostgresError with reason UnexpectedRow naming the claim", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Claim.claimAndFetch(returning([claimed, { ...fetched, attempts: "0" }]), request))
      expect(error._tag).toBe("PostgresError")
      expect(error.reason).toMatchObject({ _tag: "UnexpectedRow", operation: "claimWork.claimAndFetch" })
      expect(error.message).toMatch(/^operation claimWork\.claimAndFetch: unexpected row: /)
      expect(error.message).toContain("attempts")
    })
  )

  it.effect("a row missing a column, or of neither kind, is UnexpectedRow too", () =>
    Effect.gen(function* () {
      const { event_first: _, ...withoutEventFirst } = fetched
      for (const row of [withoutEventFirst, { ...claimed, part: 2 }, { ...claimed, claim_order: null }]) {
        const error = yield* Effect.flip(Claim.claimAndFetch(returning([row]), request))
        expect(error.reason).toMatchObject({ _tag: "UnexpectedRow", operation: "claimWork.claimAndFetch" })
      }
    })
  )

  it.effect("readStream: a stream_version that is not a number is UnexpectedRow naming readStream", () =>
    Effect.gen(function* () {
      const row = {
        event_id: fetched.event_id,
        stream_id: fetched.stream_id,
        stream_version: "1",
        event_type: "Deposited",
        payload: {},
        metadata: {},
        scope: null
      }
      const error = yield* Effect.flip(ReadSql.readStream(returning([row]), { streamId: fetched.stream_id, afterVersion: 0, limit: null }))
      expect(error.reason).toMatchObject({ _tag: "UnexpectedRow", operation: "readStream.readStream" })
      expect(error.message).toContain("stream_version")
      const [event] = yield* ReadSql.readStream(returning([{ ...row, stream_version: 1 }]), {
        streamId: fetched.stream_id,
        afterVersion: 0,
        limit: null
      })
      expect(event).toStrictEqual({
        eventId: fetched.event_id,
        streamId: fetched.stream_id,
        streamVersion: 1,
        eventType: "Deposited",
        payload: {},
        metadata: {},
        scope: null
      })
    })
  )

  it.effect("an append's version decodes whatever int8 parser the process set: text (pg's), a number, a bigint (Emmett's dumbo)", () =>
    Effect.gen(function* () {
      for (const version of ["7", 7, 7n]) {
        const row = yield* AppendSql.streamVersion(returning([{ version }]), { streamId: "0190a1b2-0000-7000-8000-0000000000aa" })
        expect(Number(row.version)).toBe(7)
      }
    })
  )
})
