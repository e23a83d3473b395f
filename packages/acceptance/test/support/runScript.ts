// The life of a support script in its child process (see childScript.ts): runs `main` until stdin ends, then interrupts
// it (its layers release: the instance deregisters) and exits; a failure is printed on stderr and exits with 1.
import { Cause, Effect, Fiber } from "effect"

export const run = <A, E>(name: string, main: Effect.Effect<A, E>): void => {
  const fiber = Effect.runFork(main)
  process.stdin.on("end", () => void Effect.runPromise(Fiber.interrupt(fiber)).then(() => process.exit(0)))
  fiber.addObserver((exit) => {
    if (exit._tag === "Failure" && !Cause.hasInterruptsOnly(exit.cause)) {
      process.stderr.write(`${name} failed: ${Cause.pretty(exit.cause)}\n`)
      process.exit(1)
    }
  })
}
