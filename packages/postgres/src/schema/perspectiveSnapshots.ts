/**
 * `wh_perspective_snapshots`: a perspective's model for a stream as of an event, the starting point of a rewind.
 *
 * @since 0.1.0
 */
import { jsonb, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core"
import { SCHEMA_PLACEHOLDER, serviceSchema } from "./serviceSchema.js"

/**
 * @category constructors
 * @since 0.1.0
 */
export const makePerspectiveSnapshots = (schema: string) =>
  serviceSchema(schema).table(
    "wh_perspective_snapshots",
    {
      streamId: uuid("stream_id").notNull(),
      perspectiveName: text("perspective_name").notNull(),
      eventId: uuid("event_id").notNull(),
      data: jsonb("data").notNull(),
      createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow()
    },
    (t) => [primaryKey({ name: "wh_perspective_snapshots_pkey", columns: [t.streamId, t.perspectiveName, t.eventId] })]
  )

/**
 * `wh_perspective_snapshots` in the placeholder schema (what drizzle-kit generates from).
 *
 * @category tables
 * @since 0.1.0
 */
export const whPerspectiveSnapshots = makePerspectiveSnapshots(SCHEMA_PLACEHOLDER)
