/**
 * Server-sent events (`text/event-stream`) read incrementally: text arrives in chunks cut
 * anywhere (inside a line, between `\r` and `\n`), and each event is handed on as soon as the
 * blank line ending it has arrived. Owns the framing only, not the transport nor what an
 * event's data means.
 *
 * @since 0.1.0
 */

/**
 * One server-sent event: its `event:` name (when given) and its `data:` lines joined by `\n`.
 *
 * @category models
 * @since 0.1.0
 */
export interface SseEvent {
  readonly event: string | undefined
  readonly data: string
}

/**
 * A reader of one stream: `push` each decoded chunk, `end` once it is over (a last event
 * without its blank line is still handed on). Blocks without `data:` (comments such as
 * `: keep-alive`) are skipped.
 *
 * @category models
 * @since 0.1.0
 */
export interface SseReader {
  readonly push: (text: string) => void
  readonly end: () => void
}

const emitBlocks = (buffer: string, emit: (e: SseEvent) => void): string => {
  const blocks = buffer.split(/\r?\n\r?\n/)
  const rest = blocks.pop() ?? ""
  for (const block of blocks) {
    let event: string | undefined
    const data: Array<string> = []
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim()
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
    }
    if (data.length > 0) emit({ event, data: data.join("\n") })
  }
  return rest
}

/**
 * A reader that hands each complete event to `emit`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const reader = (emit: (e: SseEvent) => void): SseReader => {
  let buffer = ""
  return {
    push: (text) => {
      buffer = emitBlocks(buffer + text, emit)
    },
    end: () => {
      buffer = emitBlocks(buffer + "\n\n", emit)
    }
  }
}
