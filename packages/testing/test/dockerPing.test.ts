import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { dockerEndpoint, pingDocker } from "../src/internal/dockerPing.js"

const sockets: Array<{ close: () => void; path: string }> = []
const socketPath = () => Path.join(Os.tmpdir(), `wb-docker-${process.pid}-${sockets.length}-${Date.now()}.sock`)

afterEach(() => {
  for (const s of sockets.splice(0)) {
    s.close()
    Fs.rmSync(s.path, { force: true })
  }
})

describe("dockerPing", () => {
  it("reads DOCKER_HOST as unix socket or tcp, defaulting to /var/run/docker.sock", () => {
    expect(dockerEndpoint({})).toEqual({ socketPath: "/var/run/docker.sock" })
    expect(dockerEndpoint({ DOCKER_HOST: "unix:///tmp/x.sock" })).toEqual({ socketPath: "/tmp/x.sock" })
    expect(dockerEndpoint({ DOCKER_HOST: "tcp://10.1.2.3:2376" })).toEqual({ host: "10.1.2.3", port: 2376 })
  })

  it("reports a missing socket at once", async () => {
    const reason = await pingDocker({ DOCKER_HOST: "unix:///nonexistent/docker.sock" })
    expect(reason).toMatch(/no Docker engine at \/nonexistent\/docker.sock/)
  })

  it("gives up on a socket that accepts and never answers instead of hanging", async () => {
    const path = socketPath()
    const server = Net.createServer(() => undefined) // accepts, never writes
    await new Promise<void>((resolve) => server.listen(path, resolve))
    sockets.push({ close: () => server.close(), path })
    const reason = await pingDocker({ DOCKER_HOST: `unix://${path}` }, 200)
    expect(reason).toMatch(/did not answer \/_ping within 200 ms/)
  })

  it("accepts an engine that answers OK", async () => {
    const path = socketPath()
    const server = Http.createServer((req, res) => res.end(req.url === "/_ping" ? "OK" : "?"))
    await new Promise<void>((resolve) => server.listen(path, resolve))
    sockets.push({ close: () => server.close(), path })
    expect(await pingDocker({ DOCKER_HOST: `unix://${path}` })).toBeUndefined()
  })
})
