/**
 * Errors raised while defining perspectives and assembling them into a registry.
 *
 * Every error here is a definition-time mistake: it is found when the application starts (or when codegen
 * scans the project), never while events are being applied. Each is a tagged class, so callers can
 * `Effect.catchTag` one of them or treat {@link PerspectiveDefinitionError} as a whole.
 *
 * Run-time errors live beside their concept: `PerspectiveRegistry.UnknownPerspective`,
 * `WorkerOptions.InvalidWorkerOptions`.
 *
 * @since 0.1.0
 */
import { Data } from "effect"

/**
 * A perspective name that cannot safely become a Postgres table suffix (`wh_per_<name>`).
 *
 * Names must match `/^[a-z][a-z0-9_]{0,47}$/`. `suggestion` carries the deterministic snake_case form of the
 * rejected name when that form would be valid, so the message can say what to write instead.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidPerspectiveName extends Data.TaggedError("InvalidPerspectiveName")<{
  readonly perspectiveName: string
  readonly suggestion: string | undefined
}> {
  override get message(): string {
    const versioned = /__v[0-9]+$/.exec(this.perspectiveName)
    if (versioned !== null && /^[a-z][a-z0-9_]{0,47}$/.test(this.perspectiveName)) {
      return `perspective name ${JSON.stringify(this.perspectiveName)} must not end in "${versioned[0]}" (that suffix names versions): give the base name and \`version\` instead`
    }
    const hint = this.suggestion === undefined ? "" : ` (did you mean "${this.suggestion}"?)`
    return `perspective name ${JSON.stringify(this.perspectiveName)} must match /^[a-z][a-z0-9_]{0,47}$/${hint}`
  }
}

/**
 * A perspective's `version` that is not a whole number from 1 to 9999.
 *
 * @category errors
 * @since 0.3.0
 */
export class InvalidPerspectiveVersion extends Data.TaggedError("InvalidPerspectiveVersion")<{
  readonly perspectiveName: string
  readonly version: unknown
}> {
  override get message(): string {
    return `perspective "${this.perspectiveName}": version ${String(this.version)} must be a whole number from 1 to 9999`
  }
}

/**
 * Two perspectives were registered under the same name; they would share one table and one cursor set.
 *
 * @category errors
 * @since 0.1.0
 */
export class DuplicatePerspectiveName extends Data.TaggedError("DuplicatePerspectiveName")<{
  readonly perspectiveName: string
}> {
  override get message(): string {
    return `perspective name "${this.perspectiveName}" is registered more than once`
  }
}

/**
 * A perspective lists event types it handles but has no `apply` handler for some of them.
 *
 * @category errors
 * @since 0.1.0
 */
export class MissingEventHandler extends Data.TaggedError("MissingEventHandler")<{
  readonly perspectiveName: string
  readonly eventTypes: ReadonlyArray<string>
}> {
  override get message(): string {
    return `perspective "${this.perspectiveName}" lists event types without a handler: ${this.eventTypes.join(", ")}`
  }
}

/**
 * Any error a perspective definition or registry assembly can fail with.
 *
 * @category errors
 * @since 0.1.0
 */
export type PerspectiveDefinitionError = InvalidPerspectiveName | InvalidPerspectiveVersion | DuplicatePerspectiveName | MissingEventHandler
