/**
 * Lifecycle stages at which receptors run around perspective processing.
 *
 * - `PostPerspective`: after one perspective committed an event (once per (event, perspective)).
 * - `PostAllPerspectives`: once per event, after EVERY perspective that handles its type committed it.
 * - `PostLifecycle`: once per event, after the `PostAllPerspectives` receptors of that event ran.
 * - `DeadLettered`: once per event, INSTEAD of `PostAllPerspectives` and `PostLifecycle`, when every perspective
 *   is done with the event but at least one moved it to dead letters rather than applying it. Those two stages
 *   never report such an event as a success; {@link DeadLetteredBy} names the perspectives that lack it.
 *
 * A stage runs `"inline"` (the worker waits for the receptor before going on; waiting for perspective sync
 * inside it is refused, since it would wait for the worker itself) or `"detached"` (forked; the worker does not
 * wait). Receptors see the envelope's security context.
 *
 * @since 0.1.0
 */
import { Context } from "effect"

/**
 * @category models
 * @since 0.1.0
 */
export type LifecycleStage = "PostPerspective" | "PostAllPerspectives" | "PostLifecycle" | "DeadLettered"

/**
 * @category models
 * @since 0.1.0
 */
export type StageMode = "inline" | "detached"

/**
 * All stages in the order they fire for one event.
 *
 * @category constants
 * @since 0.1.0
 */
export const stages: ReadonlyArray<LifecycleStage> = ["PostPerspective", "PostAllPerspectives", "PostLifecycle", "DeadLettered"]

/**
 * The stages that fire once an event is done with every perspective (their events are tracked durably).
 *
 * @category constants
 * @since 0.2.0
 */
export const completionStages: ReadonlyArray<LifecycleStage> = ["PostAllPerspectives", "PostLifecycle", "DeadLettered"]

/**
 * Inside a `DeadLettered` receptor: the perspectives that dead-lettered the event (empty elsewhere).
 *
 * @category references
 * @since 0.2.0
 */
export const DeadLetteredBy = Context.Reference<ReadonlyArray<string>>("@whizbang/core/LifecycleStage/DeadLetteredBy", {
  defaultValue: () => []
})

/**
 * True while an inline lifecycle receptor runs. Waiting for perspective sync there is refused: the worker that
 * would make the wait succeed is the one waiting for the receptor.
 *
 * @category references
 * @since 0.1.0
 */
export const Inline = Context.Reference<boolean>("@whizbang/core/LifecycleStage/Inline", { defaultValue: () => false })
