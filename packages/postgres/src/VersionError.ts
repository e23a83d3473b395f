/**
 * Typed errors of perspective versions (`PgPerspectiveVersions`, `whizbang cutover` / `rollback`).
 *
 * @since 0.3.0
 */
import { Data } from "effect"

/**
 * No registered version of that perspective (or not that version).
 *
 * @category errors
 * @since 0.3.0
 */
export class UnknownPerspectiveVersion extends Data.TaggedError("UnknownPerspectiveVersion")<{
  readonly baseName: string
  readonly version: number | undefined
  readonly known: ReadonlyArray<string>
}> {
  override get message(): string {
    const what = this.version === undefined ? `perspective "${this.baseName}"` : `version ${this.version} of perspective "${this.baseName}"`
    return `${what} is not registered (registered: ${this.known.length === 0 ? "none" : this.known.join(", ")})`
  }
}

/**
 * The version cannot serve reads yet: history still to replay, too many events pending, dead letters, or retired.
 *
 * @category errors
 * @since 0.3.0
 */
export class VersionNotReady extends Data.TaggedError("VersionNotReady")<{
  readonly perspectiveName: string
  readonly state: string
  readonly streamsToReplay: number
  readonly pendingEvents: number
  /** Events it dead-lettered: it would serve read models that lack them. */
  readonly deadLetters: number
  readonly maxLag: number
}> {
  override get message(): string {
    if (this.state === "retired") {
      return `${this.perspectiveName} is retired: it is no longer kept up to date (register a new version instead)`
    }
    if (this.deadLetters > 0) {
      return `${this.perspectiveName} dead-lettered ${this.deadLetters} event(s): it would serve read models that lack them (fix the cause, then \`whizbang dead-letters retry\`)`
    }
    if (this.streamsToReplay === 0 && this.pendingEvents <= this.maxLag)
      return `${this.perspectiveName} is ${this.state}, not ready to go live`
    return `${this.perspectiveName} is not caught up: ${this.streamsToReplay} stream(s) of history still to replay, ${this.pendingEvents} event(s) pending (at most ${this.maxLag} allowed)`
  }
}

/**
 * A rollback with no older retiring version to go back to: none was replaced, its grace period is over, or the live
 * version is already the older one (a rollback happened). A rollback never goes forward: `newer` names the retiring
 * versions newer than the live one, which a cutover goes to.
 *
 * @category errors
 * @since 0.3.0
 */
export class NothingToRollBack extends Data.TaggedError("NothingToRollBack")<{
  readonly baseName: string
  /** The live version's key. @since 0.3.0 */
  readonly live?: string | undefined
  /** Retiring versions newer than the live one (what `whizbang cutover <base>` goes forward to). @since 0.3.0 */
  readonly newer?: ReadonlyArray<string> | undefined
}> {
  override get message(): string {
    const live = this.live === undefined ? "" : ` than the live ${this.live}`
    const newer = this.newer ?? []
    const forward =
      newer.length === 0
        ? " (none was replaced, or its grace period ended)"
        : `; ${newer.join(", ")} ${newer.length === 1 ? "is" : "are"} newer: \`whizbang cutover ${this.baseName}\` goes forward`
    return `perspective "${this.baseName}" has nothing to roll back to: no version older${live} is retiring${forward}`
  }
}

/**
 * The version did not apply the events pending at the start of the hand-over in time; nothing was switched.
 *
 * @category errors
 * @since 0.3.0
 */
export class CutoverTimedOut extends Data.TaggedError("CutoverTimedOut")<{
  readonly perspectiveName: string
  readonly pendingEvents: number
  readonly timeoutMillis: number
}> {
  override get message(): string {
    return `cutover to ${this.perspectiveName} timed out after ${this.timeoutMillis} ms with ${this.pendingEvents} event(s) still pending; reads still serve the previous version`
  }
}

/**
 * `awaitLive` gave up: the version was not live within its timeout (it may still go live later).
 *
 * @category errors
 * @since 0.3.0
 */
export class VersionWaitTimedOut extends Data.TaggedError("VersionWaitTimedOut")<{
  readonly perspectiveName: string
  readonly state: string
  /** Share of its history applied, 0..1, when the wait gave up. */
  readonly progress: number
  readonly pendingEvents: number
  readonly timeoutMillis: number
}> {
  override get message(): string {
    return `${this.perspectiveName} is not live after ${this.timeoutMillis} ms: ${this.state}, ${Math.round(this.progress * 100)}% of its history applied, ${this.pendingEvents} event(s) pending`
  }
}

/**
 * A relation in the way of a version's table or view (a user table named `wh_per_<name>__v1`, a view where a table
 * is expected).
 *
 * @category errors
 * @since 0.3.0
 */
export class VersionTableConflict extends Data.TaggedError("VersionTableConflict")<{
  readonly relation: string
  readonly reason: string
}> {
  override get message(): string {
    return `cannot set up perspective versions: ${this.relation} ${this.reason}`
  }
}

/**
 * A retire refused: a live instance runs the version (it would keep declaring it; stop or redeploy it first, or
 * `force`), or a cutover or rollback is handing reads over to it (`ready`).
 *
 * @category errors
 * @since 0.3.0
 */
export class VersionInUse extends Data.TaggedError("VersionInUse")<{
  readonly perspectiveName: string
  readonly reason: "RunByLiveInstance" | "HandOverInProgress"
  /** Live instances that run it (`RunByLiveInstance`). */
  readonly instances: number
}> {
  override get message(): string {
    return this.reason === "HandOverInProgress"
      ? `${this.perspectiveName} is being handed over (ready): let the cutover or rollback finish first`
      : `${this.perspectiveName} is run by ${this.instances} live instance(s): deploy a release without it first (or force, and those instances log that it is retired)`
  }
}

/**
 * Any error of this module.
 *
 * @category errors
 * @since 0.3.0
 */
export type VersionError =
  | UnknownPerspectiveVersion
  | VersionNotReady
  | NothingToRollBack
  | CutoverTimedOut
  | VersionWaitTimedOut
  | VersionTableConflict
  | VersionInUse
