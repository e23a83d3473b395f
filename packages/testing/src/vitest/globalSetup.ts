/**
 * vitest global setup: finds one PostgreSQL server for the whole run and provides its URL to every test file under
 * `whizbangTestPostgresUrl` (see `TestDatabase.layer`). Add it to `test.globalSetup` in your vitest config.
 *
 * @since 0.1.0
 */
import type { TestProject } from "vitest/node"
import * as TestPostgres from "../TestPostgres.js"

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await TestPostgres.start()
  if (process.env.WHIZBANG_TEST_QUIET !== "1") {
    console.log(`[whizbang] test PostgreSQL from ${server.source}`)
  }
  project.provide("whizbangTestPostgresUrl", server.url)
  return () => server.stop()
}
