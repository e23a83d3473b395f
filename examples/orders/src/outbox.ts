/**
 * The confirmation outbox: a lifecycle receptor that fires once per paid order, after ALL perspectives applied
 * the payment, and records a confirmation message to send.
 */
import { Effect } from "effect"
import { PgClient, Receptor } from "whizbang"
import { OrderPaid } from "./domain.js"

export const createOutbox = Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
  client.query(`CREATE TABLE IF NOT EXISTS orders_outbox (
    event_id uuid PRIMARY KEY, order_id uuid NOT NULL, message text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)
)

export const confirmationReceptor = Effect.gen(function* () {
  const client = yield* PgClient.PgClient
  return Receptor.make({
    name: "send_confirmation",
    handles: [OrderPaid],
    stage: "PostAllPerspectives",
    handle: (envelope) => {
      const paid = envelope.payload
      // The event id is the key: a receptor re-fired after a crash writes nothing twice.
      return client.query("INSERT INTO orders_outbox (event_id, order_id, message) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", [
        envelope.eventId,
        paid.orderId,
        `Thank you! Order ${paid.orderId} is paid (${paid.amount.toFixed(2)}).`
      ])
    }
  })
})
