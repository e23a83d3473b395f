// The fetch's rows come unordered from PostgreSQL; the coordinator hands them over by stream, perspective and event id.
import { describe, expect, it } from "vitest"
import { type PendingRow, toPendingEvents } from "../src/internal/pendingRows.js"

const uuid = (n: number) => `00000000-0000-7000-8000-${n.toString(16).padStart(12, "0")}`

const row = (stream: number, perspective: string, event: number, extra: Partial<PendingRow> = {}): PendingRow => ({
  work_id: `${uuid(stream)}|${perspective}|${uuid(event)}`,
  stream_id: uuid(stream),
  perspective_name: perspective,
  event_id: uuid(event),
  attempts: 0,
  cursor_last_event_id: null,
  blocked: false,
  rewind_required: false,
  fires: true,
  more: false,
  event_first: false,
  event_type: null,
  payload: null,
  metadata: null,
  scope: null,
  stream_version: null,
  model: null,
  ...extra
})

const withEvent = (r: PendingRow, version: number): PendingRow => ({
  ...r,
  event_first: true,
  event_type: "Deposited",
  payload: { amount: version },
  metadata: {},
  scope: {},
  stream_version: version
})

describe("toPendingEvents", () => {
  it("orders the rows by stream, perspective and event id whatever order they arrive in", () => {
    // Two streams, two perspectives each, two events each; each event's columns on one perspective's row only.
    const rows = [
      withEvent(row(2, "b", 21), 1),
      row(1, "b", 12),
      row(2, "a", 22),
      withEvent(row(1, "a", 11, { model: [{ n: 1 }] }), 1),
      row(2, "a", 21),
      withEvent(row(1, "a", 12), 2),
      withEvent(row(2, "b", 22), 2),
      row(1, "b", 11, { model: [{ n: 9 }] })
    ]
    const events = toPendingEvents(rows, true)
    expect(events.map((e) => `${e.streamId.slice(-1)}${e.perspectiveName}${Number.parseInt(e.eventId.slice(-12), 16)}`)).toEqual([
      "1a11",
      "1a12",
      "1b11",
      "1b12",
      "2a21",
      "2a22",
      "2b21",
      "2b22"
    ])
    // An event's columns are shared by its rows of every perspective.
    expect(events.find((e) => e.perspectiveName === "b" && e.eventId === uuid(12))?.payload).toEqual({ amount: 2 })
    expect(events.find((e) => e.perspectiveName === "a" && e.eventId === uuid(21))?.streamVersion).toBe(1)
    // A pair's stored row comes on its lowest event's row, and every row of the pair carries it.
    expect(events.filter((e) => e.streamId === uuid(1)).map((e) => e.storedModel)).toEqual([
      { data: { n: 1 } },
      { data: { n: 1 } },
      { data: { n: 9 } },
      { data: { n: 9 } }
    ])
    expect(events.filter((e) => e.streamId === uuid(2)).map((e) => e.storedModel)).toEqual([null, null, null, null])
  })

  it("leaves out a work row whose event is not stored, and carries no model unless models were loaded", () => {
    const events = toPendingEvents([row(1, "a", 2), withEvent(row(1, "a", 1, { model: [{ n: 1 }] }), 1)], false)
    expect(events.map((e) => e.eventId)).toEqual([uuid(1)])
    expect("storedModel" in events[0]!).toBe(false)
  })
})
