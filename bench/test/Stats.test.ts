import { describe, expect, it } from "vitest"
import * as Stats from "../src/Stats.js"

describe("Stats.latency", () => {
  it("takes the maximum of a long run's samples (more than a call's arguments can hold)", () => {
    const samples = Array.from({ length: 500_000 }, (_, i) => (i * 7919) % 1_000)
    samples[123_456] = 5_000
    expect(Stats.latency(samples).max).toBe(5_000)
    expect(Stats.latency([]).max).toBeNaN()
  })
})
