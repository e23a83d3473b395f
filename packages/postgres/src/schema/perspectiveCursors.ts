/**
 * `wh_perspective_cursors`: per (stream, perspective) progress, status flags (None 0, Processing 1,
 * Completed 2, Failed 4, CatchingUp 8, RewindRequired 32) and the stream-lock columns.
 *
 * @since 0.1.0
 */
import { integer, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core"
import { SCHEMA_PLACEHOLDER, serviceSchema } from "./serviceSchema.js"

/**
 * @category constructors
 * @since 0.1.0
 */
export const makePerspectiveCursors = (schema: string) =>
  serviceSchema(schema).table(
    "wh_perspective_cursors",
    {
      streamId: uuid("stream_id").notNull(),
      perspectiveName: text("perspective_name").notNull(),
      lastEventId: uuid("last_event_id"),
      status: integer("status").notNull().default(0),
      error: text("error"),
      processedAt: timestamp("processed_at", { withTimezone: true }),
      rewindTriggerEventId: uuid("rewind_trigger_event_id"),
      rewindFirstFlaggedAt: timestamp("rewind_first_flagged_at", { withTimezone: true }),
      rewindFlaggedAt: timestamp("rewind_flagged_at", { withTimezone: true }),
      streamLockInstanceId: uuid("stream_lock_instance_id"),
      streamLockExpiry: timestamp("stream_lock_expiry", { withTimezone: true }),
      streamLockReason: text("stream_lock_reason")
    },
    (t) => [primaryKey({ name: "wh_perspective_cursors_pkey", columns: [t.streamId, t.perspectiveName] })]
  )

/**
 * `wh_perspective_cursors` in the placeholder schema (what drizzle-kit generates from).
 *
 * @category tables
 * @since 0.1.0
 */
export const whPerspectiveCursors = makePerspectiveCursors(SCHEMA_PLACEHOLDER)
