/**
 * What the scanner found: event, perspective and receptor definitions with their source positions.
 *
 * @since 0.1.0
 */

/**
 * A 1-based position in a source file.
 *
 * @category models
 * @since 0.1.0
 */
export interface Position {
  readonly file: string
  readonly line: number
  readonly column: number
}

/**
 * An event type named at some position: a handler key, an `events` entry, a `handles` entry.
 *
 * @category models
 * @since 0.1.0
 */
export interface Reference extends Position {
  readonly type: string
}

/**
 * An `EventDefinition.make("Type", ...)` bound to an exported const (`exportName` is `undefined` when it is not,
 * which is also reported as a diagnostic).
 *
 * @category models
 * @since 0.1.0
 */
export interface EventDefinitionInfo extends Position {
  readonly type: string
  readonly exportName: string | undefined
}

/**
 * A `Perspective.make({ name, version?, events, apply })`: `eventTypes` are the routed types (the `apply` keys, which
 * the type checker holds to the `events` listed) in declaration order; `references` are every event type it names.
 *
 * @category models
 * @since 0.1.0
 */
export interface PerspectiveInfo extends Position {
  /** The key: the base name for version 1, `<baseName>__v<version>` after (as `Perspective.make`'s `name`). */
  readonly name: string
  /** The `name` written in `Perspective.make`: `wh_per_<baseName>` serves its live version. @since 0.3.0 */
  readonly baseName: string
  /** The declared `version` (1 when not given). @since 0.3.0 */
  readonly version: number
  readonly exportName: string | undefined
  readonly eventTypes: ReadonlyArray<string>
  readonly references: ReadonlyArray<Reference>
}

/**
 * One `awaitPerspectiveSync` entry of a receptor; `eventTypes` `undefined` means every type the perspective handles.
 *
 * @category models
 * @since 0.1.0
 */
export interface AwaitInfo extends Position {
  readonly perspective: string
  readonly eventTypes: ReadonlyArray<Reference> | undefined
}

/**
 * A `Receptor.make({ name, handles, awaitPerspectiveSync? })`.
 *
 * @category models
 * @since 0.1.0
 */
export interface ReceptorInfo extends Position {
  readonly name: string | undefined
  readonly handles: ReadonlyArray<Reference>
  readonly awaitPerspectiveSync: ReadonlyArray<AwaitInfo>
}
