/**
 * `wh_dead_letters`: events that failed `maxPerspectiveEventAttempts` times, kept with their payload and error
 * so nothing is lost silently.
 *
 * @since 0.1.0
 */
import { index, integer, jsonb, text, timestamp, uuid } from "drizzle-orm/pg-core"
import { SCHEMA_PLACEHOLDER, serviceSchema } from "./serviceSchema.js"

/**
 * @category constructors
 * @since 0.1.0
 */
export const makeDeadLetters = (schema: string) =>
  serviceSchema(schema).table(
    "wh_dead_letters",
    {
      id: uuid("id").primaryKey().defaultRandom(),
      workId: uuid("work_id").notNull(),
      streamId: uuid("stream_id").notNull(),
      perspectiveName: text("perspective_name").notNull(),
      eventId: uuid("event_id").notNull(),
      eventType: text("event_type").notNull(),
      payload: jsonb("payload"),
      error: text("error").notNull(),
      attempts: integer("attempts").notNull(),
      createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow()
    },
    (t) => [index("wh_dead_letters_stream_perspective_idx").on(t.streamId, t.perspectiveName, t.eventId)]
  )

/**
 * `wh_dead_letters` in the placeholder schema (what drizzle-kit generates from).
 *
 * @category tables
 * @since 0.1.0
 */
export const whDeadLetters = makeDeadLetters(SCHEMA_PLACEHOLDER)
