/**
 * Cross-scope discovery: the pending events of one stream of a perspective (and, when asked, its events still in
 * dead letters), or of every stream without one, at most `limit` ids.
 *
 * @internal
 */
import { EventId, Perspective } from "@whizbang/core"
import type { PgClient, PostgresError as PgError } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Effect } from "effect"
import type { DiscoveryOptions } from "../SyncInquiryPort.js"

const Sql = PgOperations.SyncInquiry

/** `PgSyncInquiry`'s `pendingForStream`, over `client`. @internal */
export const pendingForStreamWith =
  (client: PgClient.PgClient["Service"], limit: number) =>
  (
    perspectiveName: string,
    streamId: string | undefined,
    eventTypes?: ReadonlyArray<string>,
    discovery?: DiscoveryOptions
  ): Effect.Effect<ReadonlyArray<string>, PgError.PostgresError> => {
    if (streamId !== undefined && !EventId.isUuid(streamId)) return Effect.succeed([])
    const asked = { baseName: Perspective.parseKey(perspectiveName).baseName, key: perspectiveName, eventTypes: eventTypes ?? [], limit }
    return Effect.map(
      streamId === undefined
        ? Sql.pendingEvents(client, asked)
        : Sql.pendingEventsOfStream(client, { ...asked, streamId, deadLettered: discovery?.deadLettered === true }),
      (rows) => rows.map((r) => r.eventId)
    )
  }
