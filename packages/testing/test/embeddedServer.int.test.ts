import pg from "pg"
import { describe, expect, it } from "vitest"
import { closedToOthers, initdbPath, startEmbeddedServer } from "../src/internal/embeddedServer.js"

// The third fallback of TestPostgres, started the way the suite's global setup starts it (inside vitest's module
// runner), whoever runs the tests: a user without a server or Docker gets a working PostgreSQL — or, as root in a
// folder the `postgres` user cannot enter (a mode-700 temporary folder, /root/app), the documented one-line refusal.
describe("embedded PostgreSQL fallback", () => {
  it("starts, answers a query, and stops (or, as root behind a closed folder, refuses in one line)", async () => {
    const closed = process.getuid?.() === 0 ? closedToOthers(await initdbPath()) : undefined
    if (closed !== undefined) {
      const refusal = await startEmbeddedServer().then(
        () => undefined,
        (error: unknown) => String(error instanceof Error ? error.message : error)
      )
      expect(refusal).toContain(`because ${closed} is closed to other users`)
      expect(refusal?.split("\n")).toHaveLength(1)
      return
    }
    const server = await startEmbeddedServer()
    try {
      const client = new pg.Client({ connectionString: server.url })
      await client.connect()
      try {
        const { rows } = await client.query<{ answer: number }>("SELECT 41 + 1 AS answer")
        expect(rows[0]?.answer).toBe(42)
      } finally {
        await client.end()
      }
    } finally {
      await server.stop()
    }
  }, 60_000)
})
