// The operations' rows are decoded against real PostgreSQL: the types pg hands back (uuid and text as strings,
// int as numbers, timestamptz as Dates, jsonb parsed, text[] as arrays) decode, and a row of another shape (here a
// column whose type a schema of another release changed) is a typed error naming the operation, where the hand
// mapping it replaces (`Number(r.process_id)`) had reported NaN.
import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { PgClient, PgStatus } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { PgTestDatabase } from "@whizbang/testing"
import { Effect, Option } from "effect"

const sql = (text: string, params: ReadonlyArray<unknown> = []) => PgClient.PgClient.use((c) => c.query(text, params))

layer(PgTestDatabase.layer({ schema: "operations" }))((it) => {
  it.effect("a dead letter decodes to its fields with pg's types: a Date, a number, the parsed payload", () =>
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const id = randomUUID()
      const streamId = randomUUID()
      const eventId = randomUUID()
      yield* sql(
        `insert into wh_dead_letters (id, work_id, stream_id, perspective_name, event_id, event_type, payload, error, attempts)
         values ($1, gen_random_uuid(), $2, 'balance', $3, 'Deposited', '{"amount": 5}', 'rejected', 3)`,
        [id, streamId, eventId]
      )
      const [letter] = yield* PgOperations.DeadLetters.list(client, { perspectiveName: "balance", limit: 10 })
      expect(letter).toMatchObject({
        id,
        perspectiveName: "balance",
        streamId,
        eventId,
        eventType: "Deposited",
        attempts: 3,
        error: "rejected"
      })
      expect(letter?.createdAt).toBeInstanceOf(Date)
      const shown = yield* PgOperations.DeadLetters.show(client, { id })
      expect(Option.map(shown, (d) => d.payload)).toStrictEqual(Option.some({ amount: 5 }))
    })
  )

  it.effect("PgStatus.instances: a row the schema does not expect fails with UnexpectedRow naming status.instances", () =>
    Effect.gen(function* () {
      yield* sql(
        `insert into wh_service_instances (instance_id, service_name, host_name, process_id, perspective_names)
         values ($1, 'orders', 'host-a', 4242, '{balance}')`,
        [randomUUID()]
      )
      const [instance] = yield* PgStatus.instances
      expect(instance).toMatchObject({ serviceName: "orders", hostName: "host-a", processId: 4242, perspectives: ["balance"] })
      expect(typeof instance?.startedAt).toBe("string")

      yield* sql("alter table wh_service_instances alter column process_id type text")
      yield* sql("update wh_service_instances set process_id = 'pid-4242'")
      const error = yield* Effect.flip(PgStatus.instances)
      expect(error.reason).toMatchObject({ _tag: "UnexpectedRow", operation: "status.instances" })
      expect(error.message).toContain("process_id")
    })
  )
})
