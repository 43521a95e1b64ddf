/**
 * Help text wrapped to the terminal: effect/cli renders each description on one line, however
 * long; this wraps the rendered help at word boundaries to the width (`helpWidth`), each
 * continuation line indented to where its text started (a table row's description column, a
 * paragraph's indent). Usage lines and examples are commands to copy and stay whole, as does a
 * single word longer than the line (a path, a URL).
 *
 * @since 0.1.0
 */
import { CliOutput, TerminalCapabilities } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Below this many columns, wrapping would leave a description a word per line: wrap at it anyway. */
const MIN_WIDTH = 40

/** A description column narrower than this goes below its row instead, `NEXT_LINE_INDENT` deeper. */
const MIN_COLUMN = 24
const NEXT_LINE_INDENT = 8

/** Without a terminal (a pipe, a file) and without COLUMNS. */
const DEFAULT_WIDTH = 80

/**
 * The width help is wrapped to: `COLUMNS` when it is a positive whole number (the user's or the
 * shell's explicit choice), else the terminal's columns when stdout is one, else 80; never
 * below 40.
 *
 * @category constructors
 * @since 0.1.0
 */
export const helpWidth = (
  stdout: { readonly isTTY?: boolean | undefined; readonly columns?: number | undefined },
  env: Readonly<Record<string, string | undefined>>
): number => {
  const fromEnv = /^\d+$/.test(env["COLUMNS"] ?? "") ? Number(env["COLUMNS"]) : 0
  const fromTerminal = stdout.isTTY === true && stdout.columns !== undefined && stdout.columns > 0 ? stdout.columns : 0
  const width = fromEnv > 0 ? fromEnv : fromTerminal > 0 ? fromTerminal : DEFAULT_WIDTH
  return Math.max(MIN_WIDTH, width)
}

// Sections whose lines are commands to copy: never broken.
const WHOLE_SECTIONS: ReadonlySet<string> = new Set(["USAGE", "EXAMPLES"])
// Sections of running text: continuation lines keep the line's own indent.
const PROSE_SECTIONS: ReadonlySet<string> = new Set(["DESCRIPTION"])

// oxlint-disable-next-line no-control-regex
const stripAnsi = (text: string): string => text.replace(/\u001B\[[0-9;]*m/g, "")

/** A table row: its indent, its left cell (single spaces only) and the padding before the description. */
const TABLE_ROW = /^( *\S+(?: \S+)*)( {2,})(?=\S)/

/**
 * Greedy word wrap of `text` (which starts with `head`, kept whole) to `width` columns, each
 * continuation line starting with `indent` spaces. Spaces inside escape codes do not occur, so
 * words keep their colours.
 */
const wrapLine = (head: string, body: string, indent: number, width: number): ReadonlyArray<string> => {
  const lines: Array<string> = []
  const words = body.split(/ +/).filter((w) => w !== "")
  let current = head
  let empty = true
  for (const word of words) {
    const candidate = empty ? current + word : `${current} ${word}`
    if (!empty && CliOutput.displayWidth(candidate) > width) {
      lines.push(current)
      current = " ".repeat(indent) + word
    } else {
      current = candidate
    }
    empty = false
  }
  lines.push(current)
  return lines
}

/**
 * Wraps rendered help `text` to `width` columns (see the module comment). A table row continues
 * under its description column; a row whose left cell pushed its description out of line
 * continues under the column the other rows of its table use.
 *
 * @category combinators
 * @since 0.1.0
 */
export const wrapHelp = (text: string, width: number): string => {
  const out: Array<string> = []
  let section = ""
  // The description column of the current table, from its first row with room to spare.
  let tableColumn: number | undefined
  for (const line of text.split("\n")) {
    const plain = stripAnsi(line)
    if (plain !== "" && !plain.startsWith(" ")) {
      section = plain.trim()
      tableColumn = undefined
      out.push(line)
      continue
    }
    const row = WHOLE_SECTIONS.has(section) || PROSE_SECTIONS.has(section) ? null : TABLE_ROW.exec(line)
    if (row !== null && tableColumn === undefined) tableColumn = CliOutput.displayWidth(row[0])
    if (CliOutput.displayWidth(line) <= width || WHOLE_SECTIONS.has(section) || plain.trim() === "") {
      out.push(line)
      continue
    }
    const lead = /^ */.exec(line)![0]
    if (row !== null && width - CliOutput.displayWidth(row[0]) < MIN_COLUMN) {
      // Too little room beside the left cell: the description goes below it, indented deeper.
      const indent = lead.length + NEXT_LINE_INDENT
      out.push(row[1]!, ...wrapLine(" ".repeat(indent), line.slice(row[0].length), indent, width))
    } else if (row !== null) {
      out.push(...wrapLine(row[0], line.slice(row[0].length), CliOutput.displayWidth(row[0]), width))
    } else if (PROSE_SECTIONS.has(section) || tableColumn === undefined) {
      out.push(...wrapLine(lead, line.slice(lead.length), lead.length, width))
    } else {
      out.push(...wrapLine(lead, line.slice(lead.length), tableColumn, width))
    }
  }
  return out.join("\n")
}

/**
 * effect/cli's formatter (coloured as its presenter would colour it: when the terminal can)
 * with help wrapped to `width`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerFormatter = (width: number): Layer.Layer<never> =>
  Layer.effect(CliOutput.Formatter)(
    Effect.gen(function*() {
      const { canColor } = yield* TerminalCapabilities.TerminalCapabilities
      const base = CliOutput.defaultFormatter({ colors: canColor })
      return { ...base, formatHelpDoc: (doc) => wrapHelp(base.formatHelpDoc(doc), width) }
    })
  )
