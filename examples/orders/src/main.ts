/**
 * `pnpm start`: the orders API on DATABASE_URL, or on a throw-away embedded PostgreSQL when it is unset.
 * Flags: --port N (default 3000; 0 = any free port), --instances N (run N separate worker processes; default 0 =
 * the worker runs inside this process).
 */
import { fork } from "node:child_process"
import * as Http from "node:http"
import { fileURLToPath } from "node:url"
import { Effect, ManagedRuntime } from "effect"
import { TestPostgres } from "@whizbang/testing"
import { listener } from "./api.js"
import * as Service from "./service.js"

const flag = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  const value = i === -1 ? fallback : Number(process.argv[i + 1])
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a non-negative integer`)
  return value
}
const port = flag("port", 3000)
const instances = flag("instances", 0)

const server = process.env.DATABASE_URL
  ? { url: process.env.DATABASE_URL, stop: async () => undefined }
  : await TestPostgres.startEmbedded()
console.log(process.env.DATABASE_URL ? "Using DATABASE_URL" : "Started a throw-away embedded PostgreSQL (set DATABASE_URL to use yours)")

const runtime = ManagedRuntime.make(Service.layer({ databaseUrl: server.url, runWorker: instances === 0 }))
await runtime.runPromise(Effect.void) // builds the layers: migrations run, worker starts

const workers = Array.from({ length: instances }, () =>
  fork(fileURLToPath(new URL("./worker.ts", import.meta.url)), [], { env: { ...process.env, DATABASE_URL: server.url }, execArgv: ["--import", "tsx"] }))

const http = Http.createServer(listener((effect) => runtime.runPromise(effect)))
http.listen(port, "127.0.0.1", () => {
  const address = http.address()
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : port}`
  console.log(`Orders API on ${url}${instances > 0 ? ` with ${instances} worker process(es)` : ""}. Try:`)
  console.log(`  curl -s -X POST ${url}/orders -H 'content-type: application/json' -d '{"customerId":"0195f0a4-8c7e-7c56-9a4e-3d8b2f1c0a11"}'`)
  console.log(`  curl -s -X POST ${url}/orders/<orderId>/items -d '{"sku":"tea","quantity":2,"unitPrice":3.5}'`)
  console.log(`  curl -s -X POST ${url}/orders/<orderId>/pay`)
  console.log(`  curl -s ${url}/orders/<orderId>`)
})

const shutdown = async () => {
  http.close()
  for (const w of workers) w.kill("SIGTERM")
  await runtime.dispose()
  await server.stop()
  process.exit(0)
}
process.on("SIGINT", () => void shutdown())
process.on("SIGTERM", () => void shutdown())
