/**
 * `pnpm start`: the orders API on DATABASE_URL, or on a throw-away embedded PostgreSQL when it is unset.
 * Flags: --port N (or PORT=N; default 3000; 0 = any free port), --instances N (run N separate worker processes;
 * default 0 = the worker runs inside this process).
 *
 * The port is taken before anything else starts, so a busy port costs one line and leaves nothing behind. Ctrl-C
 * stops the API, then the worker(s), then the embedded PostgreSQL: the database and worker processes run in their
 * own process groups, so the terminal's SIGINT reaches only this process, which stops them in that order.
 */
import { type ChildProcess, fork } from "node:child_process"
import * as Http from "node:http"
import { fileURLToPath } from "node:url"
import { Effect, ManagedRuntime } from "effect"
import { listener } from "./api.js"
import * as Service from "./service.js"

const fail = (message: string, code = 1): never => {
  console.error(message)
  process.exit(code)
}

const flag = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  const raw = i === -1 ? undefined : process.argv[i + 1]
  const value = raw === undefined ? fallback : Number(raw)
  return Number.isInteger(value) && value >= 0 ? value : fail(`--${name} must be a non-negative integer (got ${raw})`, 2)
}
const portFromEnv = process.env.PORT === undefined || process.env.PORT === "" ? 3000 : Number(process.env.PORT)
if (!Number.isInteger(portFromEnv) || portFromEnv < 0) fail(`PORT must be a non-negative integer (got ${process.env.PORT})`, 2)
const port = flag("port", portFromEnv)
const instances = flag("instances", 0)

// 1. The port: requests get 503 until the service is ready.
let handle: Http.RequestListener = (_req, res) => void res.writeHead(503, { "content-type": "text/plain" }).end("starting\n")
const http = Http.createServer((req, res) => handle(req, res))
const listenError = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
  http.once("error", resolve)
  http.listen(port, "127.0.0.1", () => resolve(undefined))
})
if (listenError !== undefined) {
  fail(
    listenError.code === "EADDRINUSE"
      ? `Port ${port} is in use: choose another with --port N (pnpm start -- --port 3001) or PORT=N; --port 0 picks a free one.`
      : `Cannot listen on 127.0.0.1:${port}: ${listenError.message}`
  )
}

const tsx = ["--import", "tsx"]
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url))
const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())))

// 2. PostgreSQL: DATABASE_URL, or an embedded server hosted by a detached process (see embeddedHost.ts).
const startEmbedded = () =>
  new Promise<{ readonly url: string; readonly stop: () => Promise<void> }>((resolve, reject) => {
    const host = fork(here("./embeddedHost.ts"), [], { detached: true, execArgv: tsx, stdio: ["ignore", "inherit", "inherit", "ipc"] })
    host.once("exit", (code) => reject(new Error(`the embedded PostgreSQL host exited (${code})`)))
    host.once("message", (message: { readonly url?: string; readonly error?: string }) => {
      if (message.url === undefined) return reject(new Error(message.error ?? "no URL"))
      const stop = () => {
        if (host.connected) host.send("stop")
        return exited(host)
      }
      resolve({ url: message.url, stop })
    })
  })

const database = process.env.DATABASE_URL
  ? { url: process.env.DATABASE_URL, stop: async () => undefined }
  : await startEmbedded().catch((error: Error) => {
      http.close()
      return fail(`Could not start the embedded PostgreSQL: ${error.message.split("\n")[0]}`)
    })
console.log(process.env.DATABASE_URL ? "Using DATABASE_URL" : "Started a throw-away embedded PostgreSQL (set DATABASE_URL to use yours)")

// 3. The service (migrations run, the in-process worker starts unless --instances), then the worker processes.
const schema = "orders"
const runtime = ManagedRuntime.make(Service.layer({ databaseUrl: database.url, schema, runWorker: instances === 0 }))
const workers: Array<ChildProcess> = []

let stopping: Promise<void> | undefined
const shutdown = (code: number): Promise<void> => {
  stopping ??= (async () => {
    await new Promise<void>((resolve) => {
      http.close(() => resolve())
      http.closeAllConnections()
    })
    for (const worker of workers) if (worker.connected) worker.kill("SIGTERM")
    await Promise.all(workers.map(exited))
    await runtime.dispose()
    await database.stop()
    console.log("Stopped: API, worker(s), PostgreSQL.")
    process.exit(code)
  })()
  return stopping
}
process.on("SIGINT", () => void shutdown(0))
process.on("SIGTERM", () => void shutdown(0))

const started = await runtime.runPromise(Effect.void).then(
  () => true,
  (error: unknown) => {
    console.error(`Could not start the service: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`)
    return false
  }
)
if (!started) await shutdown(1)
for (let i = 0; i < instances; i++) {
  workers.push(fork(here("./worker.ts"), [], { detached: true, env: { ...process.env, DATABASE_URL: database.url }, execArgv: tsx }))
}

handle = listener((effect) => runtime.runPromise(effect))
const address = http.address()
const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : port}`
console.log(`Orders API on ${url}${instances > 0 ? ` with ${instances} worker process(es)` : ""}. Ctrl-C stops it. Try:`)
console.log(
  `  curl -s -X POST ${url}/orders -H 'content-type: application/json' -d '{"customerId":"0195f0a4-8c7e-7c56-9a4e-3d8b2f1c0a11"}'`
)
console.log(`  curl -s -X POST ${url}/orders/<orderId>/items -d '{"sku":"tea","quantity":2,"unitPrice":3.5}'`)
console.log(`  curl -s -X POST ${url}/orders/<orderId>/pay`)
console.log(`  curl -s ${url}/orders/<orderId>`)
// What the operations CLI needs to find this service's data: the database and the service schema (not the CLI's
// default `whizbang`). A DATABASE_URL of your own is not printed (it may hold a password): the CLI reads it too.
console.log(
  process.env.DATABASE_URL
    ? `whizbang CLI (with the same DATABASE_URL): pnpm whizbang status --schema ${schema}`
    : `whizbang CLI: pnpm whizbang status --database-url ${database.url} --schema ${schema}`
)
