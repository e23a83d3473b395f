/**
 * `wh_perspective_events`: the work queue, one row per (stream, perspective, event), inserted in the append
 * transaction and deleted (or stamped `processed_at` in debug mode) when the apply commits.
 *
 * @since 0.1.0
 */
import { sql } from "drizzle-orm"
import { boolean, index, integer, text, timestamp, unique, uuid } from "drizzle-orm/pg-core"
import { SCHEMA_PLACEHOLDER, serviceSchema } from "./serviceSchema.js"

/**
 * @category constructors
 * @since 0.1.0
 */
export const makePerspectiveEvents = (schema: string) =>
  serviceSchema(schema).table(
    "wh_perspective_events",
    {
      workId: uuid("work_id").primaryKey(),
      streamId: uuid("stream_id").notNull(),
      perspectiveName: text("perspective_name").notNull(),
      eventId: uuid("event_id").notNull(),
      instanceId: uuid("instance_id"),
      leaseExpiry: timestamp("lease_expiry", { withTimezone: true }),
      /** Apply failures, not lease claims. */
      attempts: integer("attempts").notNull().default(0),
      error: text("error"),
      /** Retry backoff: not claimable before this instant. */
      scheduledFor: timestamp("scheduled_for", { withTimezone: true }),
      partitionNumber: integer("partition_number").notNull(),
      /** Debug mode keeps processed rows and stamps them instead of deleting. */
      processedAt: timestamp("processed_at", { withTimezone: true }),
      /** Live work (PostPerspective receptors fire for it); false: background work, a version's history (migration 0005). */
      fires: boolean("fires").notNull().default(true),
      createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow()
    },
    (t) => [
      unique("wh_perspective_events_stream_perspective_event_key").on(t.streamId, t.perspectiveName, t.eventId),
      // Claiming walks pending work oldest-first (event ids are UUIDv7, so time-ordered), live work before
      // background work, each on its own partial index (migration 0007); debug-mode processed rows are in neither.
      index("wh_perspective_events_claim_idx").on(t.eventId).where(sql`processed_at IS NULL AND fires`),
      index("wh_perspective_events_background_claim_idx").on(t.eventId).where(sql`processed_at IS NULL AND NOT fires`)
      // (instance_id, lease_expiry) had an index until migration 0010: leases are per stream (wh_active_streams).
    ]
  )

/**
 * `wh_perspective_events` in the placeholder schema (what drizzle-kit generates from).
 *
 * @category tables
 * @since 0.1.0
 */
export const whPerspectiveEvents = makePerspectiveEvents(SCHEMA_PLACEHOLDER)
