/**
 * The framing of `forkjoin mcp`'s standard input: newline-delimited JSON-RPC split in linear
 * time (each chunk is scanned once for newlines, pending bytes are kept as a list of chunks and
 * joined once per message), a size cap (an over-cap message is answered with an error and its
 * bytes are dropped up to the next newline, never buffered), and a check of each line before
 * the MCP server sees it: a line that is not JSON, not a JSON-RPC object or batch, or nested
 * deeper than the cap is answered with a JSON-RPC error on stdout and not passed on. The MCP
 * server then only ever receives one whole, valid line at a time.
 */
import * as Effect from "effect/Effect"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import * as Layer from "effect/Layer"

/** The largest message accepted, in bytes (the newline excluded). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024

/** The deepest nesting of arrays and objects accepted in a message. */
export const MAX_DEPTH = 512

/** JSON-RPC's "Parse error" (the line is not JSON). */
export const PARSE_ERROR = -32700

/** JSON-RPC's "Invalid Request" (not a request object or batch, too large, too deep). */
export const INVALID_REQUEST = -32600

/** What the framer makes of the input: a whole line's text, or the start of an over-cap message. */
export type Frame =
  | { readonly _tag: "Line"; readonly text: string }
  | { readonly _tag: "TooLarge" }

const NEWLINE = 0x0a

/**
 * A stateful splitter of byte chunks into lines (without the newline, a trailing `\r` dropped,
 * blank lines skipped). A line longer than `maxBytes` yields one `TooLarge` as soon as it
 * crosses the cap; the rest of it, up to its newline, is skipped without being kept.
 */
export const makeFramer = (maxBytes: number = MAX_MESSAGE_BYTES) => {
  let parts: Array<Uint8Array> = []
  let pending = 0
  let discarding = false

  const take = (segment: Uint8Array, out: Array<Frame>): void => {
    if (discarding || segment.length === 0) return
    if (pending + segment.length > maxBytes) {
      parts = []
      pending = 0
      discarding = true
      out.push({ _tag: "TooLarge" })
      return
    }
    parts.push(segment)
    pending += segment.length
  }

  const endLine = (out: Array<Frame>): void => {
    if (discarding) {
      discarding = false
      return
    }
    const bytes = Buffer.concat(parts, pending)
    parts = []
    pending = 0
    const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length
    const text = bytes.toString("utf8", 0, end)
    if (text.trim() !== "") out.push({ _tag: "Line", text })
  }

  return {
    /** The frames completed (or refused) by `chunk`. */
    push: (chunk: Uint8Array): ReadonlyArray<Frame> => {
      const out: Array<Frame> = []
      const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
      let start = 0
      for (;;) {
        const nl = bytes.indexOf(NEWLINE, start)
        if (nl === -1) {
          take(bytes.subarray(start), out)
          return out
        }
        take(bytes.subarray(start, nl), out)
        endLine(out)
        start = nl + 1
      }
    }
  }
}

/**
 * The deepest nesting of `[` and `{` in a JSON text (brackets inside strings ignored), stopping
 * as soon as it passes `limit`: checked before parsing, so nothing downstream recurses that deep.
 */
export const nestingExceeds = (text: string, limit: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/** A JSON-RPC error answer with no id (the request's id could not be read), as one line. */
export const errorLine = (code: number, message: string): string =>
  `${JSON.stringify({ jsonrpc: "2.0", id: null, error: { code, message } })}\n`

/** The error answer for one line, or `undefined` when it may go to the MCP server. */
export const checkLine = (text: string, maxDepth: number = MAX_DEPTH): string | undefined => {
  if (nestingExceeds(text, maxDepth)) {
    return errorLine(INVALID_REQUEST, `Invalid Request: the message nests arrays and objects deeper than ${maxDepth} levels.`)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    return errorLine(PARSE_ERROR, `Parse error: the line is not JSON (${reason.slice(0, 200)}); send one JSON-RPC message per line.`)
  }
  if (typeof value !== "object" || value === null) {
    return errorLine(INVALID_REQUEST, "Invalid Request: a message must be a JSON-RPC request object.")
  }
  return undefined
}

const tooLarge = (maxBytes: number) =>
  errorLine(INVALID_REQUEST, `Invalid Request: the message is larger than ${maxBytes} bytes; it was discarded up to its end.`)

/**
 * Standard input as whole, checked lines (each ending in a newline); every refused line is
 * answered through `answer` instead.
 */
export const framedInput = <E, R, E2>(
  input: Stream.Stream<Uint8Array, E, R>,
  answer: (line: string) => Effect.Effect<void, E2>,
  options: { readonly maxBytes?: number; readonly maxDepth?: number } = {}
): Stream.Stream<string, E | E2, R> =>
  Stream.suspend(() => {
    const maxBytes = options.maxBytes ?? MAX_MESSAGE_BYTES
    const framer = makeFramer(maxBytes)
    return input.pipe(
      Stream.mapEffect((chunk) =>
        Effect.gen(function*() {
          const lines: Array<string> = []
          for (const frame of framer.push(chunk)) {
            const refusal = frame._tag === "TooLarge" ? tooLarge(maxBytes) : checkLine(frame.text, options.maxDepth)
            if (refusal !== undefined) yield* answer(refusal)
            else if (frame._tag === "Line") lines.push(`${frame.text}\n`)
          }
          return lines
        })
      ),
      Stream.flattenIterable
    )
  })

/**
 * The surrounding `Stdio` with its standard input framed and checked (`framedInput`); refusals
 * are written to its standard output, the protocol channel.
 */
export const layerFramedStdio: Layer.Layer<Stdio.Stdio, never, Stdio.Stdio> = Layer.effect(
  Stdio.Stdio,
  Effect.gen(function*() {
    const base = yield* Stdio.Stdio
    const answer = (line: string) => Stream.make(line).pipe(Stream.run(base.stdout()))
    return Stdio.make({
      ...base,
      stdin: framedInput(base.stdin, answer).pipe(Stream.encodeText)
    })
  })
)
