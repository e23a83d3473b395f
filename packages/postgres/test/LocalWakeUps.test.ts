import { describe, expect, it } from "vitest"
import * as LocalWakeUps from "../src/internal/localWakeUps.js"

describe("local wake-ups", () => {
  it("delivers a publish to every subscriber until it unsubscribes", () => {
    const seen: Array<string> = []
    const first = LocalWakeUps.subscribe((schema) => void seen.push(`a:${schema}`))
    const second = LocalWakeUps.subscribe((schema) => void seen.push(`b:${schema}`))
    LocalWakeUps.publish("svc")
    first()
    LocalWakeUps.publish("other")
    second()
    LocalWakeUps.publish("svc")
    expect(seen).toEqual(["a:svc", "b:svc", "b:other"])
  })

  it("recognises only this process's token in a notification's detail", () => {
    expect(LocalWakeUps.processToken).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    expect(LocalWakeUps.fromThisProcess(LocalWakeUps.processToken)).toBe(true)
    expect(LocalWakeUps.fromThisProcess(undefined)).toBe(false)
    expect(LocalWakeUps.fromThisProcess("f81d4fae-7dec-41d0-a765-00a0c91e6bf6")).toBe(false)
  })
})
