// The chaos command at a small size: 3 worker processes, random SIGKILLs and restarts while events are appended;
// the run must lose nothing, apply nothing twice, leave no work row and no dead letter.
import { expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Effect } from "effect"
import { inject } from "vitest"
import { formatReport, runChaos } from "../src/runChaos.js"

it.live(
  "survives SIGKILLed workers: every read model equals the fold of its stream",
  () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.make(inject(TestDatabase.serverUrlKey))
        const report = yield* Effect.promise(() =>
          runChaos({ url, instances: 3, streams: 60, events: 3000, kills: 4, duration: 20, abandonSeconds: 2, log: () => undefined })
        )
        for (const line of formatReport(report)) console.log(line)
        expect(report.eventsAppended).toBe(3000)
        expect(report.eventsLost).toBe(0)
        expect(report.eventsAppliedTwice).toBe(0)
        expect(report.streamsOutOfOrder).toBe(0)
        expect(report.modelsNotEqualToFold).toBe(0)
        expect(report.workRowsLeft).toBe(0)
        expect(report.deadLetters).toBe(0)
        expect(report.kills).toHaveLength(4)
        // Each killed instance's share moved on within the threshold (2 s) + a heartbeat/poll, with slack for a busy CI box.
        expect(report.worstTakeoverMs).toBeLessThan(6000)
        expect(report.passed).toBe(true)
      })
    ),
  150_000
)
