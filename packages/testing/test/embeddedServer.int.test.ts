import pg from "pg"
import { describe, expect, it } from "vitest"
import { startEmbeddedServer } from "../src/internal/embeddedServer.js"

// The third fallback of TestPostgres, started the way the suite's global setup starts it (inside vitest's module
// runner), whoever runs the tests (root included): a user without a server or Docker gets a working PostgreSQL.
describe("embedded PostgreSQL fallback", () => {
  it("starts, answers a query, and stops", async () => {
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
