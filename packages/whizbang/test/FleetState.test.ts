// The fleet's state (`internal/fleetState.ts`): what a tenant's replay of history gives way to.
import { describe, expect, it } from "@effect/vitest"
import { FleetState } from "../src/internal/fleetState.js"

const fleet = (...ids: ReadonlyArray<string>) => {
  const state = new FleetState()
  state.refreshed(ids.map((id) => ({ id, schema: `tenant_${id}`, state: "active" })))
  return state
}

describe("FleetState.othersHaveWork", () => {
  it("a replaying tenant alone: nothing to give way to; another held or waiting: it gives way", () => {
    const state = fleet("replay", "quiet", "late")
    expect(state.othersHaveWork("replay")).toBe(false)
    state.notified("replay")
    state.nextHolds(1)
    expect(state.othersHaveWork("replay")).toBe(false)
    // Another tenant waiting for a slot (maxActive 1 is taken).
    state.notified("quiet")
    expect(state.othersHaveWork("replay")).toBe(true)
    // Held beside it.
    state.nextHolds(2)
    expect(state.othersHaveWork("replay")).toBe(true)
    expect(state.othersHaveWork("quiet")).toBe(true)
    // Let go: nothing left but the replay.
    state.letGo("quiet")
    expect(state.othersHaveWork("replay")).toBe(false)
    expect(state.othersHaveWork("late")).toBe(true)
  })
})
