/** Validation of the rewinder's duration options: finite and positive, else `InvalidRebuildOptions` naming it. */
import { Duration, Effect, Option } from "effect"
import { InvalidRebuildOptions } from "../StreamLockError.js"

export const decodeDuration = (option: string, input: Duration.Input | undefined, fallback: Duration.Duration) => {
  if (input === undefined) return Effect.succeed(fallback)
  const decoded = Duration.fromInput(input)
  if (Option.isNone(decoded) || !Duration.isFinite(decoded.value) || Duration.toMillis(decoded.value) <= 0) {
    return Effect.fail(new InvalidRebuildOptions({ option, rule: "must be a finite, positive duration", value: String(input) }))
  }
  return Effect.succeed(decoded.value)
}

const scans = ["blocking", "background", "off"] as const

export const decodeStartupScan = (option: string, input: unknown): Effect.Effect<(typeof scans)[number], InvalidRebuildOptions> =>
  input === undefined
    ? Effect.succeed("blocking")
    : scans.includes(input as (typeof scans)[number])
      ? Effect.succeed(input as (typeof scans)[number])
      : Effect.fail(
          new InvalidRebuildOptions({
            option,
            rule: `must be "blocking", "background" or "off"`,
            value: JSON.stringify(input) ?? String(input)
          })
        )
