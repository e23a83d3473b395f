/**
 * `wh_active_streams`: stream affinity — which instance owns a stream with pending work, in which partition,
 * until when.
 *
 * @since 0.1.0
 */
import { index, integer, timestamp, uuid } from "drizzle-orm/pg-core"
import { SCHEMA_PLACEHOLDER, serviceSchema } from "./serviceSchema.js"

/**
 * @category constructors
 * @since 0.1.0
 */
export const makeActiveStreams = (schema: string) =>
  serviceSchema(schema).table(
    "wh_active_streams",
    {
      streamId: uuid("stream_id").primaryKey(),
      instanceId: uuid("instance_id"),
      partitionNumber: integer("partition_number").notNull(),
      leaseExpiry: timestamp("lease_expiry", { withTimezone: true })
    },
    (t) => [index("wh_active_streams_instance_idx").on(t.instanceId)]
  )

/**
 * `wh_active_streams` in the placeholder schema (what drizzle-kit generates from).
 *
 * @category tables
 * @since 0.1.0
 */
export const whActiveStreams = makeActiveStreams(SCHEMA_PLACEHOLDER)
