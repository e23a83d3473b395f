import { PerspectiveStreamLocker } from "@whizbang/stream-locker"
import { Clock, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as LockerContract from "./contract/lockerContract.js"

// The in-memory locker reads Effect's Clock, so TestClock drives expiry: "waiting" is an instant adjust.
const fixture = Layer.effect(
  LockerContract.LockerFixture,
  Effect.gen(function* () {
    const cursors = yield* PerspectiveStreamLocker.MemoryCursors
    return LockerContract.LockerFixture.of({
      ensureCursor: cursors.ensureCursor,
      lockOf: cursors.lockOf,
      now: Clock.currentTimeMillis,
      advance: TestClock.adjust
    })
  })
)

LockerContract.run("memory", Layer.empty, (options) => fixture.pipe(Layer.provideMerge(PerspectiveStreamLocker.layerMemory(options))))
