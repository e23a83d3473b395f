import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Clock, Effect, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import * as DebuggerAwareTimeout from "../src/DebuggerAwareTimeout.js"
import { isRunning } from "./support.js"

/**
 * A clock whose wall time can jump ahead while every sleep stays on the TestClock: what a fiber observes when
 * the process was frozen (breakpoint, SIGSTOP) during one of its sleeps. TestClock alone cannot show this,
 * because it wakes each sleep exactly at its due time.
 */
const freezableClock = Effect.gen(function* () {
  const clock = yield* Clock.Clock
  let frozenFor = 0
  const now = () => clock.currentTimeMillisUnsafe() + frozenFor
  const wrapped: Clock.Clock = { ...clock, currentTimeMillisUnsafe: now, currentTimeMillis: Effect.sync(now) }
  return {
    run: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Clock.Clock, wrapped),
    freeze: (millis: number) =>
      Effect.sync(() => {
        frozenFor += millis
      })
  }
})

describe("DebuggerAwareTimeout", () => {
  it.effect("sleep ends after the duration of active time", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.forkChild(DebuggerAwareTimeout.sleep(1000))
      yield* TestClock.adjust(999)
      expect(isRunning(fiber)).toBe(true)
      yield* TestClock.adjust(1)
      yield* Fiber.join(fiber)
    })
  )

  it.effect("time spent frozen does not count", () =>
    Effect.gen(function* () {
      const clock = yield* freezableClock
      const fiber = yield* Effect.forkChild(clock.run(DebuggerAwareTimeout.sleep(1000)))
      yield* TestClock.adjust(500)
      yield* clock.freeze(60_000) // the process stops for a minute in the middle of a tick
      yield* TestClock.adjust(100) // that tick ends: it observed 60.1 s and counts 100 ms
      yield* TestClock.adjust(399)
      expect(isRunning(fiber)).toBe(true)
      yield* TestClock.adjust(1)
      yield* Fiber.join(fiber)
    })
  )

  it.effect("jumps below the freeze threshold count (the detection is what saves the wait)", () =>
    Effect.gen(function* () {
      const clock = yield* freezableClock
      const fiber = yield* Effect.forkChild(clock.run(DebuggerAwareTimeout.sleep(1000, { freezeThreshold: "1 hour" })))
      yield* TestClock.adjust(500)
      yield* clock.freeze(60_000)
      yield* TestClock.adjust(100)
      expect(isRunning(fiber)).toBe(false)
    })
  )

  it.effect("timeoutOption: Some when the effect wins, None at the timeout, failures kept, infinity waits", () =>
    Effect.gen(function* () {
      for (const debuggerAware of [true, false]) {
        const wins = yield* Effect.forkChild(
          DebuggerAwareTimeout.timeoutOption(Effect.as(Effect.sleep(300), "ok"), 1000, { debuggerAware })
        )
        const loses = yield* Effect.forkChild(DebuggerAwareTimeout.timeoutOption(Effect.never, 1000, { debuggerAware }))
        const forever = yield* Effect.forkChild(
          DebuggerAwareTimeout.timeoutOption(Effect.as(Effect.sleep("1 day"), 1), "Infinity", { debuggerAware })
        )
        yield* TestClock.adjust(1000)
        expect(yield* Fiber.join(wins)).toEqual(Option.some("ok"))
        expect(yield* Fiber.join(loses)).toEqual(Option.none())
        expect(isRunning(forever)).toBe(true)
        yield* TestClock.adjust("1 day")
        expect(yield* Fiber.join(forever)).toEqual(Option.some(1))
        expect(yield* Effect.flip(DebuggerAwareTimeout.timeoutOption(Effect.fail("boom"), 1000, { debuggerAware }))).toBe("boom")
      }
    })
  )
})

// A real freeze: a child process waiting with a 1 s timeout is stopped (SIGSTOP) for 2.5 s, resumed, and
// answered 300 ms later. Debugger-aware, it has been active for well under a second and still gets the answer;
// with a plain timeout the overdue timer fires on resume.
const fixture = fileURLToPath(new URL("./fixtures/frozenWait.ts", import.meta.url))
const root = fileURLToPath(new URL("../../..", import.meta.url))

const freezeChild = (mode: "aware" | "plain") =>
  Effect.callback<string>((resume) => {
    const child = spawn(process.execPath, ["--import", "tsx", fixture, mode], { cwd: root, stdio: ["pipe", "pipe", "inherit"] })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      if (output === "ready\n") {
        child.kill("SIGSTOP")
        setTimeout(() => {
          child.kill("SIGCONT")
          setTimeout(() => child.stdin.write("go\n"), 300)
        }, 2500)
      }
    })
    child.on("exit", () => resume(Effect.succeed(output.replace("ready\n", "").trim())))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

it.live(
  "a process frozen longer than the timeout does not time out (debugger-aware); a plain timeout does",
  () =>
    Effect.gen(function* () {
      const [aware, plain] = yield* Effect.all([freezeChild("aware"), freezeChild("plain")], { concurrency: 2 })
      expect(aware).toBe("synced")
      expect(plain).toBe("timedout")
    }),
  30_000
)
