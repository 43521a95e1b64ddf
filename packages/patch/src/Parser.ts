/**
 * Parser of the Codex `apply_patch` format with upstream's leniency: the whole text is
 * trimmed (Rust semantics), CRLF patch text works, a literal heredoc wrapper is dropped,
 * hunk headers and the outer markers are matched trimmed. Errors reuse upstream texts,
 * which models are trained on. Pure and total: any input yields a value or an `EngineError`.
 *
 * @since 0.1.0
 */
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Result from "effect/Result"
import { trim } from "./internal/rustText.ts"
import type { Profile } from "./Plan.ts"

/**
 * One body line of an update chunk: context (`" "`), removal (`"-"`) or addition (`"+"`).
 *
 * @category models
 * @since 0.1.0
 */
export interface ChunkLine {
  readonly op: " " | "-" | "+"
  readonly text: string
}

/**
 * One `@@` chunk: header context lines (Codex allows one; `native` accepts stacked `@@`
 * lines, sought in order), body lines, and whether `*** End of File` anchors it.
 *
 * @category models
 * @since 0.1.0
 */
export interface UpdateChunk {
  readonly contexts: ReadonlyArray<string>
  readonly lines: ReadonlyArray<ChunkLine>
  readonly endOfFile: boolean
  /** 1-based line of the patch where the chunk starts. */
  readonly line: number
}

/**
 * One file operation of a patch, with the raw path as written (normalized later).
 *
 * @category models
 * @since 0.1.0
 */
export type PatchOperation =
  | { readonly _tag: "AddFile"; readonly path: string; readonly contents: string; readonly line: number }
  | { readonly _tag: "DeleteFile"; readonly path: string; readonly line: number }
  | {
    readonly _tag: "UpdateFile"
    readonly path: string
    readonly moveTo: string | undefined
    readonly chunks: ReadonlyArray<UpdateChunk>
    readonly line: number
  }

/**
 * A parsed patch: its file operations in order.
 *
 * @category models
 * @since 0.1.0
 */
export interface ParsedPatch {
  readonly operations: ReadonlyArray<PatchOperation>
}

/**
 * Parser options; the profile decides whether stacked `@@` header lines are accepted.
 *
 * @category models
 * @since 0.1.0
 */
export interface ParseOptions {
  readonly profile?: Profile
}

const BEGIN = "*** Begin Patch"
const END = "*** End Patch"
const ADD = "*** Add File: "
const DELETE = "*** Delete File: "
const UPDATE = "*** Update File: "
const MOVE = "*** Move to: "
const EOF_MARKER = "*** End of File"
const EMPTY_CONTEXT = "@@"
const CONTEXT = "@@ "

class ParseFailure {
  constructor(readonly message: string, readonly line: number | undefined) {}
}

const invalidPatch = (message: string) => new ParseFailure(message, undefined)
const invalidHunk = (message: string, line: number) => new ParseFailure(message, line)

/** Rust `str::lines`: split on LF, drop one trailing CR per line, no final empty line. */
const rustLines = (s: string): Array<string> => {
  if (s === "") return []
  const parts = s.split("\n")
  if (parts[parts.length - 1] === "") parts.pop()
  return parts.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l))
}

const checkBoundaries = (lines: ReadonlyArray<string>): ParseFailure | undefined => {
  const first = lines.length > 0 ? trim(lines[0]!) : undefined
  const last = lines.length > 0 ? trim(lines[lines.length - 1]!) : undefined
  if (first === BEGIN && last === END) return undefined
  if (first !== BEGIN) return invalidPatch("The first line of the patch must be '*** Begin Patch'")
  return invalidPatch("The last line of the patch must be '*** End Patch'")
}

const HEREDOC_OPENERS = new Set(["<<EOF", "<<'EOF'", "<<\"EOF\""])

const patchBody = (text: string): ReadonlyArray<string> | ParseFailure => {
  const lines = rustLines(trim(text))
  const strict = checkBoundaries(lines)
  if (strict === undefined) return lines
  // Lenient: gpt-4.1 sometimes passes a heredoc literally; accept `<<EOF ... EOF` around the patch.
  if (lines.length >= 4 && HEREDOC_OPENERS.has(lines[0]!) && lines[lines.length - 1]!.endsWith("EOF")) {
    const inner = lines.slice(1, -1)
    return checkBoundaries(inner) ?? inner
  }
  return strict
}

const parseChunk = (
  lines: ReadonlyArray<string>,
  at: number,
  line: number,
  allowMissingContext: boolean,
  stacked: boolean
): { chunk: UpdateChunk; consumed: number } | ParseFailure => {
  if (at >= lines.length) return invalidHunk("Update hunk does not contain any lines", line)
  const contexts: Array<string> = []
  let start = at
  const readHeader = (l: string): boolean => {
    if (l === EMPTY_CONTEXT) return true
    if (l.startsWith(CONTEXT)) {
      contexts.push(l.slice(CONTEXT.length))
      return true
    }
    return false
  }
  if (readHeader(lines[start]!)) {
    start++
    // native only: stacked `@@ class A` / `@@ def m` headers narrow the search step by step.
    while (stacked && start < lines.length && readHeader(lines[start]!)) start++
  } else if (!allowMissingContext) {
    return invalidHunk(`Expected update hunk to start with a @@ context marker, got: '${lines[at]}'`, line)
  }
  if (start >= lines.length) return invalidHunk("Update hunk does not contain any lines", line + 1)
  const body: Array<ChunkLine> = []
  let endOfFile = false
  let parsed = 0
  for (let i = start; i < lines.length; i++) {
    const l = lines[i]!
    if (l === EOF_MARKER) {
      if (parsed === 0) return invalidHunk("Update hunk does not contain any lines", line + 1)
      endOfFile = true
      parsed++
      break
    }
    const c = l.charAt(0)
    if (l === "") body.push({ op: " ", text: "" })
    else if (c === " " || c === "+" || c === "-") body.push({ op: c, text: l.slice(1) })
    else {
      if (parsed === 0) {
        return invalidHunk(
          `Unexpected line found in update hunk: '${l}'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)`,
          line + 1
        )
      }
      break
    }
    parsed++
  }
  return { chunk: { contexts, lines: body, endOfFile, line }, consumed: start - at + parsed }
}

const parseOperation = (
  lines: ReadonlyArray<string>,
  at: number,
  line: number,
  stacked: boolean
): { op: PatchOperation; consumed: number } | ParseFailure => {
  const first = trim(lines[at]!)
  if (first.startsWith(ADD)) {
    let contents = ""
    let consumed = 1
    for (let i = at + 1; i < lines.length && lines[i]!.startsWith("+"); i++) {
      contents += lines[i]!.slice(1) + "\n"
      consumed++
    }
    return { op: { _tag: "AddFile", path: first.slice(ADD.length), contents, line }, consumed }
  }
  if (first.startsWith(DELETE)) {
    return { op: { _tag: "DeleteFile", path: first.slice(DELETE.length), line }, consumed: 1 }
  }
  if (first.startsWith(UPDATE)) {
    const path = first.slice(UPDATE.length)
    let i = at + 1
    let moveTo: string | undefined
    if (i < lines.length && lines[i]!.startsWith(MOVE)) {
      moveTo = lines[i]!.slice(MOVE.length)
      i++
    }
    const chunks: Array<UpdateChunk> = []
    while (i < lines.length) {
      const l = lines[i]!
      if (trim(l) === "") {
        i++
        continue
      }
      if (l.startsWith("*")) break
      const r = parseChunk(lines, i, line + (i - at), chunks.length === 0, stacked)
      if (r instanceof ParseFailure) return r
      chunks.push(r.chunk)
      i += r.consumed
    }
    if (chunks.length === 0) return invalidHunk(`Update file hunk for path '${path}' is empty`, line)
    return { op: { _tag: "UpdateFile", path, moveTo, chunks, line }, consumed: i - at }
  }
  return invalidHunk(
    `'${first}' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'`,
    line
  )
}

/**
 * Parses patch text. Syntax errors are `patch_syntax` (stage 2) with the upstream message
 * (`Invalid patch: …` / `Invalid patch hunk on line N: …`) and the 1-based line.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parsePatch = (text: string, options?: ParseOptions): Result.Result<ParsedPatch, EngineError> => {
  const stacked = (options?.profile ?? "native") === "native"
  const body = patchBody(text)
  const fail = (f: ParseFailure) =>
    Result.fail(
      new EngineError({
        code: "patch_syntax",
        stage: Stage.parse,
        paths: [],
        message: f.line === undefined ? `Invalid patch: ${f.message}` : `Invalid patch hunk on line ${f.line}: ${f.message}`,
        ...(f.line === undefined ? {} : { line: f.line })
      })
    )
  if (body instanceof ParseFailure) return fail(body)
  const operations: Array<PatchOperation> = []
  const inner = body.slice(0, Math.max(body.length - 1, 1))
  let i = 1
  while (i < inner.length) {
    const r = parseOperation(inner, i, i + 1, stacked)
    if (r instanceof ParseFailure) return fail(r)
    operations.push(r.op)
    i += r.consumed
  }
  return Result.succeed({ operations })
}
