// Property: whatever order PostgreSQL sends the fetch's rows in, the coordinator hands them over grouped by stream,
// then perspective, each pair in event-id order, every row once, and each event's columns on all of its rows.
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type PendingRow, toPendingEvents } from "../src/internal/pendingRows.js"

const uuid = (n: number) => `00000000-0000-7000-8000-${n.toString(16).padStart(12, "0")}`

interface Work {
  readonly stream: number
  readonly perspective: string
  readonly event: number
}

// A fetch: events of a few streams, each pending for a subset of perspectives; one row per (event, perspective).
const fetchArbitrary = fc
  .array(
    fc.record({
      stream: fc.integer({ min: 1, max: 5 }),
      perspectives: fc.subarray(["a", "b", "c"], { minLength: 1 })
    }),
    { minLength: 1, maxLength: 40 }
  )
  .chain((events) => {
    const work: Array<Work> = events.flatMap((e, i) =>
      e.perspectives.map((perspective) => ({ stream: e.stream, perspective, event: i + 1 }))
    )
    // Which of an event's rows carries its columns, and the order the server sends the rows in.
    return fc.record({
      work: fc.constant(work),
      carrier: fc.array(fc.nat(), { minLength: events.length, maxLength: events.length }),
      order: fc.shuffledSubarray(work, { minLength: work.length, maxLength: work.length }),
      modelsLoaded: fc.boolean()
    })
  })

const toRow = (w: Work, carries: boolean, firstOfPair: boolean, modelsLoaded: boolean): PendingRow => ({
  work_id: `${w.stream}|${w.perspective}|${w.event}`,
  stream_id: uuid(w.stream),
  perspective_name: w.perspective,
  event_id: uuid(w.event),
  attempts: 0,
  cursor_last_event_id: null,
  blocked: false,
  rewind_required: false,
  fires: true,
  more: false,
  event_first: carries,
  event_type: carries ? "E" : null,
  payload: carries ? { event: w.event } : null,
  metadata: carries ? {} : null,
  scope: carries ? {} : null,
  stream_version: carries ? w.event : null,
  model: modelsLoaded && firstOfPair ? [{ pair: `${w.stream}${w.perspective}` }] : null
})

describe("toPendingEvents (property)", () => {
  it("orders any arrival order by stream, perspective and event id, every row once, event columns shared", () => {
    fc.assert(
      fc.property(fetchArbitrary, ({ work, carrier, order, modelsLoaded }) => {
        const rowsOf = (event: number) => work.filter((w) => w.event === event)
        const carries = (w: Work) => {
          const rows = rowsOf(w.event)
          return rows[carrier[w.event - 1]! % rows.length] === w
        }
        const firstOfPair = (w: Work) =>
          Math.min(...work.filter((o) => o.stream === w.stream && o.perspective === w.perspective).map((o) => o.event)) === w.event
        const events = toPendingEvents(
          order.map((w) => toRow(w, carries(w), firstOfPair(w), modelsLoaded)),
          modelsLoaded
        )
        const expected = [...work].sort((x, y) =>
          x.stream !== y.stream
            ? x.stream - y.stream
            : x.perspective !== y.perspective
              ? x.perspective < y.perspective
                ? -1
                : 1
              : x.event - y.event
        )
        expect(events.map((e) => e.workId)).toEqual(expected.map((w) => `${w.stream}|${w.perspective}|${w.event}`))
        for (const e of events) {
          const n = Number.parseInt(e.eventId.slice(-12), 16)
          expect(e.payload).toEqual({ event: n })
          expect(e.streamVersion).toBe(n)
          if (modelsLoaded)
            expect(e.storedModel).toEqual({ data: { pair: `${Number.parseInt(e.streamId.slice(-12), 16)}${e.perspectiveName}` } })
        }
      }),
      { numRuns: 300 }
    )
  })
})
