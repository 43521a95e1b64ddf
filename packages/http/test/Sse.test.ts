/**
 * The event-stream reader cut at every possible place: the same events come out whole, in
 * order, whatever the chunks.
 */
import { reader, type SseEvent } from "@forkjoin/http/Sse"
import { describe, expect, it } from "vitest"

const STREAM = "event: start\ndata: {\"a\":1}\n\n: keep-alive\r\n\r\ndata: line one\r\ndata:line two\r\n\r\nevent: end\ndata: "

const read = (chunks: ReadonlyArray<string>): Array<SseEvent> => {
  const events: Array<SseEvent> = []
  const r = reader((e) => events.push(e))
  for (const c of chunks) r.push(c)
  r.end()
  return events
}

describe("Sse.reader", () => {
  it("reads events, skips comments, joins data lines and ends a last event without its blank line", () => {
    expect(read([STREAM])).toEqual([
      { event: "start", data: "{\"a\":1}" },
      { event: undefined, data: "line one\nline two" },
      { event: "end", data: "" }
    ])
  })

  it("reads the same events wherever the stream is cut in two or three", () => {
    const whole = read([STREAM])
    for (let i = 0; i <= STREAM.length; i++) {
      expect(read([STREAM.slice(0, i), STREAM.slice(i)])).toEqual(whole)
      for (let j = i; j <= STREAM.length; j += 7) expect(read([STREAM.slice(0, i), STREAM.slice(i, j), STREAM.slice(j)])).toEqual(whole)
    }
  })

  it("hands each event on as soon as its blank line has arrived", () => {
    const events: Array<SseEvent> = []
    const r = reader((e) => events.push(e))
    r.push("data: one\n")
    expect(events).toEqual([])
    r.push("\n")
    expect(events).toEqual([{ event: undefined, data: "one" }])
  })
})
