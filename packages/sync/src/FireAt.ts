/**
 * The reference's `FireAt` stages, with TypeScript names, mapped onto this architecture: a receptor runs either
 * through the {@link Dispatcher} (in the caller's fiber) or through the perspective worker at a lifecycle stage.
 *
 * | FireAt | Where it runs here |
 * | --- | --- |
 * | `LocalImmediateInline` | `Dispatcher.localInvoke` / `send`, in the caller's fiber, before it returns |
 * | `PostDistributeInline` | `Dispatcher.send(Dispatcher.event(envelope))` right after the append committed, awaited |
 * | `PostDistributeAsync` | the same, forked (`Effect.forkChild`); the caller does not wait |
 * | `PostPerspectiveInline` / `Async` | the worker, stage `PostPerspective`, mode `inline` / `detached` |
 * | `PostAllPerspectivesInline` / `Async` | the worker, stage `PostAllPerspectives`, mode `inline` / `detached` |
 * | `PostLifecycleInline` / `Async` | the worker, stage `PostLifecycle`, mode `inline` / `detached` |
 *
 * `awaitPerspectiveSync` is honoured wherever the receptor runs. A worker stage that runs inline cannot wait:
 * the worker that would apply the awaited events is the one running the stage, so {@link receptor} (through
 * `Receptor.make`) refuses it with a typed `InvalidReceptor` — use the `Async` variant.
 *
 * @since 0.2.0
 */
import { type LifecycleStage, Receptor } from "@whizbang/core"

/**
 * The stage names.
 *
 * @category models
 * @since 0.2.0
 */
export type FireAt =
  | "LocalImmediateInline"
  | "PostDistributeInline"
  | "PostDistributeAsync"
  | "PostPerspectiveInline"
  | "PostPerspectiveAsync"
  | "PostAllPerspectivesInline"
  | "PostAllPerspectivesAsync"
  | "PostLifecycleInline"
  | "PostLifecycleAsync"

/**
 * Every stage, in the order they fire for one event.
 *
 * @category constants
 * @since 0.2.0
 */
export const all: ReadonlyArray<FireAt> = [
  "LocalImmediateInline",
  "PostDistributeInline",
  "PostDistributeAsync",
  "PostPerspectiveInline",
  "PostPerspectiveAsync",
  "PostAllPerspectivesInline",
  "PostAllPerspectivesAsync",
  "PostLifecycleInline",
  "PostLifecycleAsync"
]

/**
 * Where a stage runs: through the dispatcher (awaited or forked by the caller), or the worker at a stage.
 *
 * @category models
 * @since 0.2.0
 */
export type Placement =
  | { readonly _tag: "Dispatcher"; readonly afterAppend: boolean; readonly forked: boolean }
  | { readonly _tag: "Worker"; readonly stage: LifecycleStage.LifecycleStage; readonly mode: LifecycleStage.StageMode }

/**
 * Where `fireAt` runs in this architecture.
 *
 * @category mapping
 * @since 0.2.0
 */
export const placement = (fireAt: FireAt): Placement => {
  switch (fireAt) {
    case "LocalImmediateInline":
      return { _tag: "Dispatcher", afterAppend: false, forked: false }
    case "PostDistributeInline":
      return { _tag: "Dispatcher", afterAppend: true, forked: false }
    case "PostDistributeAsync":
      return { _tag: "Dispatcher", afterAppend: true, forked: true }
    case "PostPerspectiveInline":
      return { _tag: "Worker", stage: "PostPerspective", mode: "inline" }
    case "PostPerspectiveAsync":
      return { _tag: "Worker", stage: "PostPerspective", mode: "detached" }
    case "PostAllPerspectivesInline":
      return { _tag: "Worker", stage: "PostAllPerspectives", mode: "inline" }
    case "PostAllPerspectivesAsync":
      return { _tag: "Worker", stage: "PostAllPerspectives", mode: "detached" }
    case "PostLifecycleInline":
      return { _tag: "Worker", stage: "PostLifecycle", mode: "inline" }
    case "PostLifecycleAsync":
      return { _tag: "Worker", stage: "PostLifecycle", mode: "detached" }
  }
}

/**
 * Defines a receptor that fires at `fireAt`: worker stages set `stage` and `mode`; dispatcher stages set neither
 * (hand the receptor to `Dispatcher.layer`). A plain value like `Receptor.make`'s; an inline worker stage with
 * `awaitPerspectiveSync` is refused with `InvalidReceptor` when the worker or dispatcher is built
 * (`Receptor.validate`).
 *
 * @category constructors
 * @since 0.2.0
 */
export const receptor = (fireAt: FireAt, options: Omit<Parameters<typeof Receptor.make>[0], "stage" | "mode">): Receptor.Receptor => {
  const where = placement(fireAt)
  return Receptor.make(where._tag === "Worker" ? { ...options, stage: where.stage, mode: where.mode } : options)
}
