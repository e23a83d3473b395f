// The browser and the database tools of the dashboard's browser test.
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect } from "effect"
import pg from "pg"
import { type Browser, type BrowserContext, chromium } from "playwright-core"

export const chromiumPath = "/usr/bin/chromium"

/**
 * Whether the browser test can run. Outside CI a missing Chromium skips the file with one line; in CI
 * (`CI=true`) it is a failure: `.ci/run` installs it.
 */
export const chromiumAvailable = (): boolean => {
  if (existsSync(chromiumPath)) return true
  const how = "install it with: apt-get update && apt-get install -y chromium"
  if (process.env.CI === "true") throw new Error(`the dashboard browser test needs ${chromiumPath} and CI=true: ${how}`)
  console.warn(`skipping the dashboard browser test: ${chromiumPath} is missing (${how})`)
  return false
}

/** Headless Chromium with a new empty profile, closed (and the profile removed) with the scope. */
export const browser = Effect.acquireRelease(
  Effect.promise(async () => {
    const profile = mkdtempSync(Path.join(Os.tmpdir(), "whizbang-dashboard-"))
    const context: BrowserContext = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync"
      ]
    })
    return { context, profile }
  }),
  ({ context, profile }) =>
    Effect.promise(async () => {
      await context.close().catch(() => undefined)
      rmSync(profile, { recursive: true, force: true })
    })
)

export type { Browser }

/** One statement as the server's superuser, on the maintenance database (for ALTER DATABASE and terminations). */
export const admin = (url: string, sql: string, params: ReadonlyArray<unknown> = []) =>
  Effect.promise(async () => {
    const target = new URL(url)
    target.pathname = "/postgres"
    const client = new pg.Client({ connectionString: target.toString() })
    await client.connect()
    try {
      return (await client.query(sql, [...params])).rows
    } finally {
      await client.end()
    }
  })

export const databaseOf = (url: string) => new URL(url).pathname.slice(1)
