/**
 * `wh_events`: the append-only event log. `(stream_id, stream_version)` is unique, which is the optimistic
 * concurrency check of an append; `(stream_id, event_id)` gives an append the stream's highest id in one index
 * descent (new ids go above it) and replays a stream in event-id order.
 *
 * @since 0.1.0
 */
import { bigint, index, jsonb, text, timestamp, unique, uuid } from "drizzle-orm/pg-core"
import { SCHEMA_PLACEHOLDER, serviceSchema } from "./serviceSchema.js"

/**
 * @category constructors
 * @since 0.1.0
 */
export const makeEvents = (schema: string) =>
  serviceSchema(schema).table(
    "wh_events",
    {
      eventId: uuid("event_id").primaryKey(),
      streamId: uuid("stream_id").notNull(),
      streamVersion: bigint("stream_version", { mode: "number" }).notNull(),
      eventType: text("event_type").notNull(),
      payload: jsonb("payload").notNull(),
      metadata: jsonb("metadata").notNull().default({}),
      scope: jsonb("scope"),
      createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow()
    },
    (t) => [
      unique("wh_events_stream_version_key").on(t.streamId, t.streamVersion),
      index("wh_events_stream_event_idx").on(t.streamId, t.eventId)
    ]
  )

/**
 * `wh_events` in the placeholder schema (what drizzle-kit generates from).
 *
 * @category tables
 * @since 0.1.0
 */
export const whEvents = makeEvents(SCHEMA_PLACEHOLDER)
