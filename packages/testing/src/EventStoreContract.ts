/**
 * The EventStore contract as a vitest suite: every EventStore layer (in-memory, Postgres, or a user's own) must pass
 * it. Call {@link run} from a test file with a function that builds the layer from the suite's event registry.
 *
 * @since 0.1.0
 */
import type * as EffectVitest from "@effect/vitest"
import type { EventRegistry, EventStore } from "@whizbang/core"
import type { Layer } from "effect"
import * as ContractAppends from "./internal/contractAppends.js"
import { registry } from "./internal/contractFixtures.js"
import * as ContractIds from "./internal/contractIds.js"
import * as ContractInput from "./internal/contractInput.js"

// @effect/vitest is an optional peer of @whizbang/testing and only this suite needs it: imported here, so that the
// package's other modules load without it (a static import made every `import "@whizbang/testing"` fail).
const effectVitest: typeof EffectVitest | Error = await import("@effect/vitest").catch((cause: unknown) => {
  const code = (cause as { code?: unknown }).code
  if (code !== "ERR_MODULE_NOT_FOUND" || !String((cause as Error).message).includes("'@effect/vitest'")) throw cause
  return new Error("EventStoreContract.run needs @effect/vitest (an optional peer of @whizbang/testing): pnpm add -D @effect/vitest")
})

// The suite's events and registry live beside the groups of tests that append them (`internal/contractFixtures.ts`).
export { CartCheckedOut, ItemAdded, NoteAdded, registry } from "./internal/contractFixtures.js"

/**
 * Runs the contract against the layer built by `makeLayer`. Needs `@effect/vitest` (an optional peer dependency);
 * without it, it throws an error saying what to install.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = <E>(name: string, makeLayer: (registry: EventRegistry.EventRegistry) => Layer.Layer<EventStore.EventStore, E>): void => {
  if (effectVitest instanceof Error) throw effectVitest
  const { describe, expect, layer } = effectVitest
  const storeLayer = makeLayer(registry)
  describe(`EventStore contract: ${name}`, () => {
    layer(storeLayer, { timeout: 60_000 })((it) => {
      // The groups in the suite's order: appends, expected versions, input, ranged reads, minted ids, supplied ids, payloads.
      const suite = { it, expect }
      ContractAppends.appendsAndReads(suite)
      ContractAppends.expectedVersions(suite)
      ContractInput.invalidInput(suite)
      ContractAppends.readRanges(suite)
      ContractIds.generatedIds(suite)
      ContractIds.suppliedIds(suite)
      ContractInput.unstorablePayloads(suite)
    })
  })
}
