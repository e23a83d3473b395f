import { describe, expect, it } from "@effect/vitest"
import { Duration, Result, Schema } from "effect"
import * as DurationOption from "../src/internal/durationOption.js"

const millis = (input: unknown, rule: DurationOption.Rule) => Result.map(DurationOption.check(input, rule), Duration.toMillis)

describe("DurationOption", () => {
  it("accepts every Duration.Input form", () => {
    for (const input of [
      Duration.seconds(2),
      "2 seconds",
      2000,
      [2, 0],
      { seconds: 2 },
      { seconds: 1, milliseconds: 1000 },
      2_000_000_000n
    ]) {
      expect(millis(input, "positive"), JSON.stringify(String(input))).toEqual(Result.succeed(2000))
    }
  })

  it("positive: finite and > 0", () => {
    expect(millis(0.5, "positive")).toEqual(Result.succeed(0.5))
    for (const bad of [0, -1, "0 millis", Number.NaN, Number.POSITIVE_INFINITY, "Infinity", Duration.infinity]) {
      expect(Result.isFailure(DurationOption.check(bad, "positive")), String(bad)).toBe(true)
    }
  })

  it("nonNegative: finite and >= 0", () => {
    expect(millis(0, "nonNegative")).toEqual(Result.succeed(0))
    expect(millis("0 seconds", "nonNegative")).toEqual(Result.succeed(0))
    for (const bad of [-1, "-1 second", Number.NaN, "Infinity"]) {
      expect(Result.isFailure(DurationOption.check(bad, "nonNegative")), String(bad)).toBe(true)
    }
  })

  it("wholeSeconds: a whole number of seconds, at least one", () => {
    expect(millis("5 minutes", "wholeSeconds")).toEqual(Result.succeed(300_000))
    expect(millis(1000, "wholeSeconds")).toEqual(Result.succeed(1000))
    for (const bad of [300, "1.5 seconds", "0 seconds", "500 millis", "Infinity"]) {
      expect(Result.isFailure(DurationOption.check(bad, "wholeSeconds")), String(bad)).toBe(true)
    }
  })

  it("refuses what Duration.fromInput would silently read as zero or misparse", () => {
    for (const bad of [Number.NaN, {}, { secs: 5 }, { seconds: Number.NaN }, [1], [1, 2, 3], ["1", 0], "5s", null, undefined, true]) {
      expect(Result.isFailure(DurationOption.check(bad, "nonNegative")), JSON.stringify(bad) ?? String(bad)).toBe(true)
    }
  })

  it("the message names the rule and the value as given, numbers marked as milliseconds", () => {
    expect(DurationOption.check(300, "wholeSeconds")).toEqual(
      Result.fail("must be a whole number of seconds, at least 1 second, got 300 (a number is milliseconds)")
    )
    expect(DurationOption.check("soon", "positive")).toEqual(Result.fail('must be a finite, positive duration, got "soon"'))
    expect(DurationOption.check(Duration.millis(-5), "nonNegative")).toEqual(Result.fail("must be a finite duration >= 0, got -5ms"))
    expect(DurationOption.check(5n, "positive")).toEqual(Result.succeed(Duration.nanos(5n)))
  })

  it("checkOr: the fallback when absent, the rule otherwise", () => {
    expect(DurationOption.checkOr(undefined, "positive", Duration.seconds(3))).toEqual(Result.succeed(Duration.seconds(3)))
    expect(Result.isFailure(DurationOption.checkOr(-1, "positive", Duration.seconds(3)))).toBe(true)
  })

  it("schema: decodes to a Duration, fails with the same message", () => {
    const decode = Schema.decodeUnknownResult(Schema.Struct({ timeout: DurationOption.schema("positive") }))
    const ok = decode({ timeout: "2 seconds" })
    expect(Result.isSuccess(ok) && Duration.toMillis(ok.success.timeout)).toBe(2000)
    const bad = decode({ timeout: -1 })
    expect(Result.isFailure(bad) && String(bad.failure)).toContain("must be a finite, positive duration, got -1 (a number is milliseconds)")
  })
})
