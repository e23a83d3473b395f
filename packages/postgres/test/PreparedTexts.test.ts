import { describe, expect, it } from "vitest"
import { PreparedTexts } from "../src/internal/preparedTexts.js"
import * as StatementName from "../src/internal/statementName.js"

describe("prepared statements", () => {
  it("prepares the first texts of a varying statement up to its limit, and keeps preparing those", () => {
    const texts = new PreparedTexts(2)
    expect(["a", "b", "c", "a", "b", "c"].map((t) => texts.preparable(t))).toEqual([true, true, false, true, true, false])
  })

  it("names a statement after its text: the same text the same name, another text another, within Postgres' 63 bytes", () => {
    const name = StatementName.of("SELECT $1::int")
    expect(name).toMatch(/^wh_[0-9a-f]{24}$/)
    expect(StatementName.of("SELECT $1::int")).toBe(name)
    expect(StatementName.of("SELECT $1::text")).not.toBe(name)
  })
})
