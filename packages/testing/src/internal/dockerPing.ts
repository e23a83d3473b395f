/**
 * Asks a Docker engine whether it answers, within a hard deadline.
 *
 * testcontainers fails fast when no socket exists but hangs when `DOCKER_HOST` points at a socket that accepts and
 * never answers, so the harness asks `GET /_ping` itself first.
 */
import * as Http from "node:http"

/** Where the Docker engine is expected, from `DOCKER_HOST` or the default unix socket. */
export const dockerEndpoint = (
  env: NodeJS.ProcessEnv
): { readonly socketPath: string } | { readonly host: string; readonly port: number } => {
  const dockerHost = env.DOCKER_HOST
  if (dockerHost === undefined || dockerHost === "") return { socketPath: "/var/run/docker.sock" }
  if (dockerHost.startsWith("unix://")) return { socketPath: dockerHost.slice("unix://".length) }
  const url = new URL(dockerHost.replace(/^tcp:/, "http:"))
  return { host: url.hostname, port: Number(url.port || 2375) }
}

/** Resolves to `undefined` when the engine answered `OK`, or to the reason it did not. Never rejects. */
export const pingDocker = (env: NodeJS.ProcessEnv, timeoutMs = 1500): Promise<string | undefined> =>
  new Promise((resolve) => {
    const endpoint = dockerEndpoint(env)
    const where = "socketPath" in endpoint ? endpoint.socketPath : `${endpoint.host}:${endpoint.port}`
    const request = Http.request({ ...endpoint, path: "/_ping", method: "GET", timeout: timeoutMs }, (response) => {
      let body = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (body += chunk))
      response.on("end", () => {
        clearTimeout(deadline)
        resolve(response.statusCode === 200 ? undefined : `Docker at ${where} answered ${response.statusCode} ${body.trim()}`)
      })
    })
    const deadline = setTimeout(() => {
      request.destroy()
      resolve(`Docker at ${where} did not answer /_ping within ${timeoutMs} ms`)
    }, timeoutMs)
    request.on("error", (error) => {
      clearTimeout(deadline)
      resolve(`no Docker engine at ${where} (${error.message})`)
    })
    request.end()
  })
