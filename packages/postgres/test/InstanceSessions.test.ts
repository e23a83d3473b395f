// Which recorded LISTEN sessions have ended (`instanceSessions.ts`): only sessions of this run of the server, gone
// or replaced by a newer backend with the same pid; a hidden backend start keeps the instance (left to the threshold).
import { describe, expect, it } from "vitest"
import * as InstanceSessions from "../src/internal/instanceSessions.js"

const server: InstanceSessions.Server = { serverStart: "100", pids: [11, 12, 13], backendStarts: ["200", null, "300"] }
const recorded = (instanceId: string, pid: number, backendStart: string, serverStart = "100"): InstanceSessions.Recorded => ({
  instanceId,
  pid,
  backendStart,
  serverStart
})

describe("ended LISTEN sessions", () => {
  it("a session still open is not ended", () => {
    expect(InstanceSessions.ended([recorded("a", 11, "200")], server)).toEqual([])
  })
  it("a pid the server no longer has is ended", () => {
    expect(InstanceSessions.ended([recorded("a", 99, "200")], server).map((r) => r.instanceId)).toEqual(["a"])
  })
  it("a pid reused by a newer backend is ended", () => {
    expect(InstanceSessions.ended([recorded("a", 13, "250")], server).map((r) => r.instanceId)).toEqual(["a"])
  })
  it("a pid whose backend start this role cannot see is kept", () => {
    expect(InstanceSessions.ended([recorded("a", 12, "250")], server)).toEqual([])
  })
  it("a session of another run of the server (a restart, another server) is kept, whatever its pid", () => {
    expect(InstanceSessions.ended([recorded("a", 99, "200", "50"), recorded("b", 11, "999", "50")], server)).toEqual([])
  })
})
