/**
 * `wh_lifecycle_pending`: events whose end-of-processing lifecycle stages (`PostAllPerspectives`,
 * `PostLifecycle`) have not fired yet. A row is written in the append transaction for event types that have
 * such receptors, claimed by the instance that sees the event's last work row committed, and deleted after the
 * receptors ran. Rows left by a crash are found again at start-up (orphaned lifecycles).
 *
 * @since 0.1.0
 */
import { index, timestamp, uuid } from "drizzle-orm/pg-core"
import { SCHEMA_PLACEHOLDER, serviceSchema } from "./serviceSchema.js"

/**
 * @category constructors
 * @since 0.1.0
 */
export const makeLifecyclePending = (schema: string) =>
  serviceSchema(schema).table(
    "wh_lifecycle_pending",
    {
      eventId: uuid("event_id").primaryKey(),
      streamId: uuid("stream_id").notNull(),
      claimedBy: uuid("claimed_by"),
      claimedAt: timestamp("claimed_at", { withTimezone: true }),
      createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow()
    },
    (t) => [index("wh_lifecycle_pending_stream_idx").on(t.streamId)]
  )

/**
 * `wh_lifecycle_pending` in the placeholder schema (what drizzle-kit generates from).
 *
 * @category tables
 * @since 0.1.0
 */
export const whLifecyclePending = makeLifecyclePending(SCHEMA_PLACEHOLDER)
