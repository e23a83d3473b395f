/**
 * `pnpm chaos [--instances 3] [--streams 200] [--events 5000] [--kills 5] [--duration 30] [--abandon-seconds 2] [--verbose]`
 *
 * Runs the chaos scenario against DATABASE_URL (schema `chaos`, which should be fresh), or against a throw-away
 * embedded PostgreSQL when it is unset; prints the report and exits 1 when the verification failed.
 */
import { TestPostgres } from "@whizbang/testing"
import { formatReport, runChaos } from "./runChaos.js"

const args = process.argv.slice(2)
const flag = (name: string, fallback: number) => {
  const at = args.indexOf(`--${name}`)
  if (at === -1) return fallback
  const value = Number(args[at + 1])
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} must be a non-negative integer, got ${args[at + 1]}`)
  return value
}

const options = {
  instances: Math.max(1, flag("instances", 3)),
  streams: Math.max(1, flag("streams", 200)),
  events: flag("events", 5000),
  kills: flag("kills", 5),
  duration: Math.max(1, flag("duration", 30)),
  abandonSeconds: Math.max(1, flag("abandon-seconds", 2)),
  verbose: args.includes("--verbose")
}

const fromEnv = process.env.DATABASE_URL
const server = fromEnv ? { url: fromEnv, stop: async () => undefined } : await TestPostgres.startEmbedded()
console.log(fromEnv ? "Using DATABASE_URL" : "Started an embedded PostgreSQL")
try {
  const report = await runChaos({ ...options, url: server.url })
  for (const line of formatReport(report)) console.log(line)
  process.exitCode = report.passed ? 0 : 1
} finally {
  await server.stop()
}
