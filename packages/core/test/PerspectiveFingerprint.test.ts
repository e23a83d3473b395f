import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import * as EventDefinition from "../src/EventDefinition.js"
import * as Perspective from "../src/Perspective.js"
import * as PerspectiveFingerprint from "../src/internal/perspectiveFingerprint.js"

const Deposited = EventDefinition.make("Deposited", {
  payload: Schema.Struct({ accountId: Schema.String, amount: Schema.Number }),
  streamId: (p) => p.accountId
})
const model = Schema.Struct({ total: Schema.Number })
const balance = (options: { readonly version?: number; readonly double?: boolean; readonly model?: Schema.Codec<any, any> } = {}) =>
  Perspective.make({
    name: "balance",
    version: options.version ?? 1,
    events: [Deposited],
    model: options.model ?? model,
    initial: { total: 0 },
    apply: options.double
      ? { Deposited: (m, e) => ({ total: m.total + 2 * e.payload.amount }) }
      : { Deposited: (m, e) => ({ total: m.total + e.payload.amount }) }
  })

describe("PerspectiveFingerprint", () => {
  it("is the same for the same definition made twice, and differs when the logic, the shape or the version does", () => {
    const base = PerspectiveFingerprint.of(balance())
    expect(base).toMatch(/^[0-9a-f]{16}$/)
    expect(PerspectiveFingerprint.of(balance())).toBe(base)
    expect(PerspectiveFingerprint.of(balance({ double: true }))).not.toBe(base)
    expect(
      PerspectiveFingerprint.of(balance({ model: Schema.Struct({ total: Schema.Number, by: Schema.optional(Schema.Number) }) }))
    ).not.toBe(base)
    expect(PerspectiveFingerprint.of(balance({ version: 2 }))).not.toBe(base)
  })
})
