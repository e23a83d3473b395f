/**
 * Hosts the throw-away embedded PostgreSQL of `pnpm start` in its own process group (main.ts forks it detached), so
 * a Ctrl-C in the terminal reaches the app only: the app stops first, then tells this process to stop PostgreSQL.
 * If the app goes away without asking (killed), the IPC channel closes and PostgreSQL is stopped all the same.
 */
import { TestPostgres } from "@whizbang/testing"

const send = (message: { readonly url: string } | { readonly error: string }) => process.send?.(message)

const server = await TestPostgres.startEmbedded().catch((error: unknown) => {
  send({ error: error instanceof Error ? error.message : String(error) })
  process.exit(1)
})

let stopping = false
const stop = () => {
  if (stopping) return
  stopping = true
  void server.stop().finally(() => process.exit(0))
}
process.on("message", (message) => message === "stop" && stop())
process.on("disconnect", stop)
process.on("SIGTERM", stop)
send({ url: server.url })
