/**
 * The envelope: an event as it is stored and delivered — the payload plus its identity, position, metadata and
 * the security scope it was emitted under.
 *
 * @since 0.1.0
 */

/**
 * Who and what caused an event.
 *
 * @category models
 * @since 0.1.0
 */
export interface EventMetadata {
  /** Groups every event of one request or workflow. */
  readonly correlationId: string
  /** The message (command or event) that directly caused this one, when known. */
  readonly causationId: string | null
  /** When the event was appended, ISO-8601 UTC. */
  readonly timestamp: string
}

/**
 * The security context an event was emitted under.
 *
 * @category models
 * @since 0.1.0
 */
export interface EventScope {
  readonly userId?: string | undefined
  readonly tenantId?: string | undefined
  readonly roles?: ReadonlyArray<string> | undefined
}

/**
 * A stored event.
 *
 * @category models
 * @since 0.1.0
 */
export interface Envelope<Payload = unknown, Type extends string = string> {
  /** UUIDv7, unique across the store. */
  readonly eventId: string
  readonly streamId: string
  /** 1 for the first event of a stream, then +1 for each event. */
  readonly streamVersion: number
  readonly eventType: Type
  readonly payload: Payload
  readonly metadata: EventMetadata
  readonly scope: EventScope
}
