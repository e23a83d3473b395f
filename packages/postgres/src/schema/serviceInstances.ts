/**
 * `wh_service_instances`: one row per running process of the service, kept alive by heartbeats.
 *
 * @since 0.1.0
 */
import { integer, jsonb, text, timestamp, uuid } from "drizzle-orm/pg-core"
import { SCHEMA_PLACEHOLDER, serviceSchema } from "./serviceSchema.js"

/**
 * @category constructors
 * @since 0.1.0
 */
export const makeServiceInstances = (schema: string) =>
  serviceSchema(schema).table("wh_service_instances", {
    instanceId: uuid("instance_id").primaryKey(),
    serviceName: text("service_name").notNull(),
    hostName: text("host_name").notNull(),
    processId: integer("process_id").notNull(),
    startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
    lastHeartbeatAt: timestamp("last_heartbeat_at", { withTimezone: true }).notNull().defaultNow(),
    metadata: jsonb("metadata"),
    /**
     * The perspectives this instance runs (claims and fetches only their work). NULL: not recorded (an older
     * instance), taken as running every perspective.
     */
    perspectiveNames: text("perspective_names").array()
  })

/**
 * `wh_service_instances` in the placeholder schema (what drizzle-kit generates from).
 *
 * @category tables
 * @since 0.1.0
 */
export const whServiceInstances = makeServiceInstances(SCHEMA_PLACEHOLDER)
