/**
 * The `SyncInquiryPort` `PgSyncInquiry` gives awaiters: its answers from the database (a failing query logged, its
 * events left pending), its wake-ups from the `wh_processed` notifications.
 *
 * @internal
 */
import { Perspective } from "@whizbang/core"
import type { PostgresError as PgError } from "@whizbang/postgres"
import { Effect } from "effect"
import type { Classified } from "../PgSyncInquiry.js"
import type { DiscoveryOptions, SyncInquiryPortShape } from "../SyncInquiryPort.js"
import type { ParkedWaits } from "./parkedWaits.js"
import type { ChangeSignal } from "./processedListener.js"

type PostgresError = PgError.PostgresError

/** What the port is made of. @internal */
export interface PortParts {
  /** The event types each perspective handles. */
  readonly handled: ReadonlyMap<string, ReadonlySet<string>>
  /** The bases ever seen served by versions (see `PgSyncInquiry.make`). */
  readonly versioned: ReadonlySet<string>
  readonly classifyBatched: (perspectiveName: string, eventIds: ReadonlyArray<string>) => Effect.Effect<Classified, PostgresError>
  readonly pendingForStream: (
    perspectiveName: string,
    streamId: string | undefined,
    eventTypes?: ReadonlyArray<string>,
    discovery?: DiscoveryOptions
  ) => Effect.Effect<ReadonlyArray<string>, PostgresError>
  readonly signal: ChangeSignal
  readonly parked: ParkedWaits
}

/** @internal */
export const portOf = ({ classifyBatched, handled, parked, pendingForStream, signal, versioned }: PortParts): SyncInquiryPortShape => ({
  authoritative: true,
  perspectives: new Map([...handled]),
  // Awaiters consult the tracker under the name asked for: its marks stand for the serving set only when that
  // name is the base name and the base never had versions (so the base key alone serves it).
  trustsTrackerMarks: (perspectiveName) =>
    perspectiveName === Perspective.parseKey(perspectiveName).baseName && !versioned.has(perspectiveName),
  pendingEventIds: (perspectiveName, eventIds) =>
    classifyBatched(perspectiveName, eventIds).pipe(
      Effect.map((c) => ({ pendingEventIds: c.pending, deadLetteredEventIds: c.deadLettered, failing: c.failing })),
      Effect.catch((error) =>
        Effect.as(Effect.logWarning("sync inquiry failed; the events stay pending", error), { pendingEventIds: eventIds })
      )
    ),
  pendingForStream: (perspectiveName, streamId, eventTypes, discovery) =>
    pendingForStream(perspectiveName, streamId, eventTypes, discovery).pipe(
      Effect.catch((error) => Effect.as(Effect.logWarning("sync discovery failed", error), [] as ReadonlyArray<string>))
    ),
  changes: { current: signal.current, awaitChangeAfter: (generation) => signal.awaitChangeAfter(generation) },
  // Ids without a database answer yet need no care here: the payload's key is trusted only while it alone serves.
  awaitSettled: (perspectiveName, eventIds, generation) => parked.park(perspectiveName, eventIds, generation)
})
