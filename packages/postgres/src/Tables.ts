/**
 * The drizzle tables of one service schema. drizzle qualifies every table with its schema, so a client bound to
 * schema `orders` needs tables built for `orders`: `Tables.make("orders")` (or `Tables.make(client.schema)`). Part
 * of the opt-in `@whizbang/postgres/drizzle` entry (with `drizzle-orm` installed). The definitions live in
 * `src/schema/`, one table per file, which is also what drizzle-kit generates the migrations from (in the
 * placeholder schema, see `src/schema/serviceSchema.ts`).
 *
 * @since 0.1.0
 */
import { makeActiveStreams } from "./schema/activeStreams.js"
import { makeLifecyclePending } from "./schema/lifecyclePending.js"
import { makeDeadLetters } from "./schema/deadLetters.js"
import { makeEvents } from "./schema/events.js"
import { makePerspectiveCursors } from "./schema/perspectiveCursors.js"
import { makePerspectiveEvents } from "./schema/perspectiveEvents.js"
import { makePerspectiveSnapshots } from "./schema/perspectiveSnapshots.js"
import { makeServiceInstances } from "./schema/serviceInstances.js"

/**
 * Builds every `wh_` table for `schema` (validate it first: `Identifier.validateSchema`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (schema: string) => ({
  events: makeEvents(schema),
  perspectiveEvents: makePerspectiveEvents(schema),
  perspectiveCursors: makePerspectiveCursors(schema),
  activeStreams: makeActiveStreams(schema),
  lifecyclePending: makeLifecyclePending(schema),
  serviceInstances: makeServiceInstances(schema),
  deadLetters: makeDeadLetters(schema),
  perspectiveSnapshots: makePerspectiveSnapshots(schema)
})

/**
 * @category models
 * @since 0.1.0
 */
export type Tables = ReturnType<typeof make>
