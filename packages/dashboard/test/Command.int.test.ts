// `whizbang dashboard` as an operator runs it: the real executable (tsx), a free port, the URL printed; read-only
// without --allow-actions (an action is refused and nothing changes); a bad option is a clear error and exit code 2.
// The CLI loads the built @whizbang/dashboard (run `pnpm build` first; `pnpm test` does).
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Effect } from "effect"

const root = fileURLToPath(new URL("../../../", import.meta.url))
const whizbang = (args: ReadonlyArray<string>) =>
  spawn(`${root}node_modules/.bin/tsx`, [`${root}packages/cli/src/bin.ts`, ...args], { cwd: root, env: { ...process.env, NO_COLOR: "1" } })

const exitOf = (args: ReadonlyArray<string>) =>
  Effect.promise(
    () =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = whizbang(args)
        let stderr = ""
        child.stderr.on("data", (d) => (stderr += d))
        child.on("exit", (code) => resolve({ code, stderr }))
      })
  )

/** Runs `whizbang <args>` (the dashboard) for the scope; what it printed once it says it is read-only. */
const started = (args: ReadonlyArray<string>) =>
  Effect.flatMap(
    Effect.acquireRelease(
      Effect.sync(() => whizbang(args)),
      (c) => Effect.sync(() => c.kill("SIGTERM"))
    ),
    (child) =>
      Effect.promise(
        () =>
          new Promise<string>((resolve, reject) => {
            let out = ""
            child.stdout.on("data", (d) => {
              out += d
              if (out.includes("read-only")) resolve(out)
            })
            child.on("exit", (code) => reject(new Error(`exited with ${code} before printing the URL: ${out}`)))
          })
      ).pipe(Effect.timeout("30 seconds"))
  )

describe("whizbang dashboard", () => {
  it.live("serves the page on a free port of 127.0.0.1 and prints its URL; read-only refuses actions", () =>
    Effect.gen(function* () {
      const { url } = yield* TestDatabase.TestDatabase
      expect((yield* exitOf(["--database-url", url, "--schema", "ops", "migrate"])).code).toBe(0)
      const printed = yield* started(["--database-url", url, "--schema", "ops", "dashboard", "--base-path", "/ops"])
      const page = /whizbang dashboard: (http:\/\/127\.0\.0\.1:\d+\/ops\/)/.exec(printed)?.[1]
      expect(page).toBeDefined()
      const html = yield* Effect.promise(() => fetch(page!).then((r) => r.text()))
      expect(html).toContain("schema <b>ops</b>")
      expect(html).toContain("read-only")
      const refused = yield* Effect.promise(() =>
        fetch(`${page}dead-letters/0193a1c2-7f10-7000-8000-000000000001/retry`, {
          method: "POST",
          headers: { "x-whizbang-token": "whatever-token-0123456789" },
          body: new URLSearchParams({ confirm: "yes" })
        })
      )
      expect(refused.status).toBe(403)
      expect(yield* Effect.promise(() => refused.text())).toContain("refused: this page is read-only")
    }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped)
  )

  it.live("--tenant serves that tenant's schema; /tenants lists the service's tenants", () =>
    Effect.gen(function* () {
      const { url } = yield* TestDatabase.TestDatabase
      const base = ["--database-url", url, "--schema", "ops"]
      expect((yield* exitOf([...base, "migrate"])).code).toBe(0)
      expect((yield* exitOf([...base, "tenants", "add", "acme"])).code).toBe(0)
      const printed = yield* started([...base, "dashboard", "--tenant", "acme"])
      const page = /whizbang dashboard: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(printed)?.[1]
      expect(page).toBeDefined()
      expect(yield* Effect.promise(() => fetch(page!).then((r) => r.text()))).toContain("schema <b>tenant_acme</b>")
      const tenants = yield* Effect.promise(() => fetch(`${page}tenants`).then((r) => r.text()))
      expect(tenants).toMatch(/<h2>Tenants <span class="n">2<\/span><\/h2>/)
      expect(tenants).toContain('<tr data-tenant="default"><td>default</td><td class="id">ops</td>')
      expect(tenants).toContain('<tr data-tenant="acme"><td>acme</td><td class="id">tenant_acme</td>')
    }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped)
  )

  it.live("a bad option is refused before anything listens (exit code 2)", () =>
    Effect.gen(function* () {
      const { url } = yield* TestDatabase.TestDatabase
      const { code, stderr } = yield* exitOf(["--database-url", url, "dashboard", "--base-path", "not a path"])
      expect(code).toBe(2)
      expect(stderr).toContain("base-path must be a path such as /ops/whizbang")
    }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped)
  )
})
