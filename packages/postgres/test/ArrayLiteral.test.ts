import { describe, expect, it } from "vitest"
import { encodeParam } from "../src/internal/arrayLiteral.js"

describe("array parameters", () => {
  it("encodes arrays of strings, numbers, booleans and nulls as one array literal", () => {
    expect(encodeParam(["a", 'q"uote', "back\\slash", null, undefined])).toBe('{"a","q\\"uote","back\\\\slash",null,null}')
    expect(encodeParam([1, 2.5, -3, true])).toBe("{1,2.5,-3,true}")
    expect(encodeParam([])).toBe("{}")
  })

  it("leaves to pg what a JSON literal would get wrong: control characters, surrogates, other kinds of element", () => {
    for (const value of [["a\nb"], ["\u0000"], ["\ud83d\ude00"], ["\ud800"], [[1, 2]], [new Date(0)], [1n], [Number.NaN], [{ a: 1 }]]) {
      expect(encodeParam(value)).toBe(value)
    }
  })

  it("leaves every other parameter unchanged", () => {
    for (const value of ["text", 1, null, { a: 1 }]) expect(encodeParam(value)).toBe(value)
  })
})
