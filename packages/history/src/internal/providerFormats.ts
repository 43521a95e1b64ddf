/**
 * Pure parsers of provider change events (SPEC §4.6): a Codex turn diff (a git-style unified
 * diff) and a managed Claude Edit / Write / MultiEdit tool event (JSON). Each yields the
 * claimed per-path changes, the contents it fully determines (an added file's lines, a
 * Write's content, an Edit applied to the `originalFile` the event carries), problems that
 * make the event `uncertain`, and per-path diff text for the record-diff view. A structural
 * failure (nothing that looks like the format) is an error string, and a path the caller's
 * mapper refuses is returned as that `PathRefused` value: either way nothing is ingested.
 * The shapes themselves (what a turn diff starts with, which keys a tool event needs) are the
 * schemas of `ProviderInputs.ts`; this module decodes with them and parses what they leave open.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { firstProblem, jsonPath } from "@forkjoin/schema/SchemaProblems"
import {
  ClaudeEditInput,
  ClaudeFileTool,
  ClaudeMultiEditInput,
  ClaudeWriteInput,
  CodexTurnDiff
} from "../ProviderInputs.ts"

/** One claimed change of a provider event. */
export interface ClaimedChange {
  readonly kind: "add" | "replace" | "update" | "delete" | "move"
  readonly path: string
  readonly moveFrom?: string
  /** Full content before / after, when the event determines it. */
  readonly before?: string
  readonly after?: string
  readonly mode?: number
  readonly binary: boolean
  /** Diff text (`---`/`+++`/`@@`) for this path as the provider described it. */
  readonly text: string
  readonly added: number
  readonly removed: number
  /** Hunks as (old lines, new lines) pairs, for verification by reverse application. */
  readonly hunks: ReadonlyArray<{
    readonly old: ReadonlyArray<string>
    readonly new: ReadonlyArray<string>
    /** A Claude `replace_all` edit: not invertible without the original. */
    readonly all?: boolean
  }>
}

/** A parsed event: its changes and the problems that make it `uncertain`. */
export interface ParsedEvent {
  readonly changes: ReadonlyArray<ClaimedChange>
  readonly problems: ReadonlyArray<string>
}

/** The two ingestible formats. */
export type ProviderFormat = "codex-turn-diff" | "claude-tool-event"

/** A path the provider named that does not name a file in the workspace, and why. */
export interface PathRefused {
  readonly refused: string
}

/** Maps a path the provider named to a workspace-relative one, or returns why it is refused. */
export type PathMapper = (raw: string) => { readonly path: string } | PathRefused

const stripPrefix = (p: string, prefix: string): string => (p.startsWith(prefix) ? p.slice(prefix.length) : p)

const headerPath = (raw: string, prefix: "a/" | "b/"): string | undefined => {
  let p = raw.replace(/\t.*$/, "")
  if (p.startsWith("\"") && p.endsWith("\"")) {
    try {
      p = JSON.parse(p) as string
    } catch {
      // keep as is; the path mapper refuses what is not a clean path
    }
  }
  if (p === "/dev/null") return undefined
  return stripPrefix(p, prefix)
}

// A boolean, not a guard: failing it must not narrow the text to `never`.
const isCodexTurnDiff: (text: string) => boolean = Schema.is(CodexTurnDiff)

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/

/** Parses a Codex turn diff (git-style unified diff of several files). */
export const parseCodexTurnDiff = (text: string, mapPath: PathMapper): ParsedEvent | string | PathRefused => {
  if (!isCodexTurnDiff(text)) {
    return text.trim().length === 0
      ? "the turn diff is empty"
      : `line 1 is not part of a unified diff (expected 'diff --git' or '---'): ${JSON.stringify(text.split("\n")[0]!.slice(0, 80))}`
  }
  const lines = text.split("\n")
  if (lines[lines.length - 1] === "") lines.pop()
  const changes: Array<ClaimedChange> = []
  const problems: Array<string> = []
  let i = 0
  const seen = new Set<string>()
  while (i < lines.length) {
    const line = lines[i]!
    if (!line.startsWith("diff --git ") && !line.startsWith("--- ")) {
      if (changes.length === 0) return `line ${i + 1} is not part of a unified diff (expected 'diff --git' or '---'): ${JSON.stringify(line.slice(0, 80))}`
      problems.push(`line ${i + 1} is not part of any file section`)
      i++
      continue
    }
    const start = i
    let oldPath: string | undefined
    let newPath: string | undefined
    let renameFrom: string | undefined
    let renameTo: string | undefined
    let isNew = false
    let isDeleted = false
    let mode: number | undefined
    let binary = false
    if (line.startsWith("diff --git ")) {
      const m = /^diff --git a\/(.+) b\/(.+)$/.exec(line)
      if (m !== null) {
        oldPath = m[1]
        newPath = m[2]
      }
      i++
      for (; i < lines.length && !lines[i]!.startsWith("--- ") && !lines[i]!.startsWith("diff --git "); i++) {
        const h = lines[i]!
        if (h.startsWith("new file mode ")) {
          isNew = true
          mode = parseInt(h.slice(14), 8) & 0o7777
        } else if (h.startsWith("deleted file mode ")) isDeleted = true
        else if (h.startsWith("new mode ")) mode = parseInt(h.slice(9), 8) & 0o7777
        else if (h.startsWith("rename from ")) renameFrom = h.slice(12)
        else if (h.startsWith("rename to ")) renameTo = h.slice(10)
        else if (h.startsWith("Binary files ") || h === "GIT binary patch") binary = true
      }
    }
    if (i < lines.length && lines[i]!.startsWith("--- ")) {
      const from = headerPath(lines[i]!.slice(4), "a/")
      if (i + 1 >= lines.length || !lines[i + 1]!.startsWith("+++ ")) return `line ${i + 2}: '---' must be followed by '+++'`
      const to = headerPath(lines[i + 1]!.slice(4), "b/")
      if (from === undefined) isNew = true
      if (to === undefined) isDeleted = true
      oldPath = from ?? oldPath
      newPath = to ?? newPath
      i += 2
    }
    if (renameFrom !== undefined) oldPath = renameFrom
    if (renameTo !== undefined) newPath = renameTo
    const hunks: Array<{ old: Array<string>; new: Array<string> }> = []
    let added = 0
    let removed = 0
    let oldNoNewline = false
    let newNoNewline = false
    while (i < lines.length && lines[i]!.startsWith("@@")) {
      const m = HUNK.exec(lines[i]!)
      if (m === null) return `line ${i + 1}: malformed hunk header ${JSON.stringify(lines[i]!.slice(0, 80))}`
      let oldLeft = m[2] === undefined ? 1 : Number(m[2])
      let newLeft = m[4] === undefined ? 1 : Number(m[4])
      const hunk = { old: [] as Array<string>, new: [] as Array<string> }
      i++
      let last: " " | "-" | "+" | undefined
      while (i < lines.length && (oldLeft > 0 || newLeft > 0 || lines[i]!.startsWith("\\"))) {
        const l = lines[i]!
        const tag = l[0]
        if (tag === "\\") {
          if (last === "-" || last === " ") oldNoNewline = true
          if (last === "+" || last === " ") newNoNewline = true
        } else if (tag === " " || l === "") {
          hunk.old.push(l.slice(1))
          hunk.new.push(l.slice(1))
          oldLeft--
          newLeft--
          last = " "
        } else if (tag === "-") {
          hunk.old.push(l.slice(1))
          oldLeft--
          removed++
          last = "-"
        } else if (tag === "+") {
          hunk.new.push(l.slice(1))
          newLeft--
          added++
          last = "+"
        } else break
        i++
      }
      if (oldLeft !== 0 || newLeft !== 0) problems.push(`${newPath ?? oldPath}: a hunk's line counts do not match its header`)
      hunks.push(hunk)
    }
    const sectionText = lines.slice(start, i).join("\n") + "\n"
    const claimedPath = isDeleted ? oldPath : newPath
    if (claimedPath === undefined) return `line ${start + 1}: a file section names no path`
    const mapped = mapPath(claimedPath)
    if ("refused" in mapped) return mapped
    let moveFrom: string | undefined
    if (!isNew && !isDeleted && oldPath !== undefined && oldPath !== newPath) {
      const m = mapPath(oldPath)
      if ("refused" in m) return m
      moveFrom = m.path
    }
    if (seen.has(mapped.path)) return `${mapped.path} appears twice in the turn diff`
    seen.add(mapped.path)
    if (binary) problems.push(`${mapped.path}: binary change, content not in the diff`)
    const wholeNew = isNew && hunks.length <= 1 ? (hunks[0]?.new ?? []) : undefined
    const wholeOld = isDeleted && hunks.length <= 1 ? (hunks[0]?.old ?? []) : undefined
    const join = (ls: ReadonlyArray<string>, noNewline: boolean) =>
      ls.length === 0 ? "" : ls.join("\n") + (noNewline ? "" : "\n")
    changes.push({
      kind: isNew ? "add" : isDeleted ? "delete" : moveFrom !== undefined ? "move" : "update",
      path: mapped.path,
      ...(moveFrom === undefined ? {} : { moveFrom }),
      ...(wholeOld !== undefined && !binary ? { before: join(wholeOld, oldNoNewline) } : {}),
      ...(wholeNew !== undefined && !binary ? { after: join(wholeNew, newNoNewline) } : {}),
      ...(mode === undefined ? {} : { mode }),
      binary,
      text: sectionText,
      added,
      removed,
      hunks
    })
  }
  if (changes.length === 0) return "no file sections found in the turn diff"
  return { changes, problems }
}

const asString = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined)

interface Edit {
  readonly old: string
  readonly new: string
  readonly all: boolean
}

const applyEdits = (content: string, edits: ReadonlyArray<Edit>): string | undefined => {
  let out = content
  for (const e of edits) {
    if (e.old === "") {
      if (out !== "") return undefined
      out = e.new
      continue
    }
    const at = out.indexOf(e.old)
    if (at < 0) return undefined
    out = e.all ? out.split(e.old).join(e.new) : out.slice(0, at) + e.new + out.slice(at + e.old.length)
  }
  return out
}

const editText = (p: string, edits: ReadonlyArray<Edit>) => {
  const out = [`--- a/${p}`, `+++ b/${p}`]
  let added = 0
  let removed = 0
  for (const e of edits) {
    const o = e.old === "" ? [] : e.old.replace(/\n$/, "").split("\n")
    const n = e.new === "" ? [] : e.new.replace(/\n$/, "").split("\n")
    out.push(`@@ edit${e.all ? " (all occurrences)" : ""} @@`, ...o.map((l) => `-${l}`), ...n.map((l) => `+${l}`))
    added += n.length
    removed += o.length
  }
  return { text: out.join("\n") + "\n", added, removed }
}

const isClaudeFileTool = Schema.is(ClaudeFileTool)

// Unknown keys are ignored, as hook events carry many (session_id, cwd, tool_use_id, ...).
const decodeEdit = Schema.decodeUnknownResult(ClaudeEditInput, { errors: "first" })
const decodeWrite = Schema.decodeUnknownResult(ClaudeWriteInput, { errors: "first" })
const decodeMultiEdit = Schema.decodeUnknownResult(ClaudeMultiEditInput, { errors: "first" })

/** The first problem of a failed decode: its JSON-path suffix (`.edits[1].old_string`) and message. */
const firstProblemAt = (issue: SchemaIssue.Issue): { readonly at: string; readonly message: string } => {
  const first = firstProblem(issue)
  return { at: jsonPath(first.path), message: first.message }
}

/** Parses a managed Claude Edit / Write / MultiEdit tool event (hook or tool_use JSON). */
export const parseClaudeToolEvent = (text: string, mapPath: PathMapper): ParsedEvent | string | PathRefused => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    return `the event is not JSON (${e instanceof Error ? e.message : String(e)})`
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return "the event must be a JSON object"
  const o = json as Record<string, unknown>
  const tool = asString(o["tool_name"]) ?? (o["type"] === "tool_use" ? asString(o["name"]) : undefined)
  const response = (o["tool_response"] ?? o["tool_result"]) as Record<string, unknown> | undefined
  if (tool === undefined) return "the event names no tool (expected tool_name, or type 'tool_use' with name)"
  if (!isClaudeFileTool(tool)) {
    return `tool ${JSON.stringify(tool)} does not change files; expected Edit, Write or MultiEdit`
  }
  // `tool_input` wins over `input` (a tool_use block's key) unless it is absent or null.
  const inputKey = (o["tool_input"] === undefined || o["tool_input"] === null) && o["input"] !== undefined ? "input" : "tool_input"
  const decode = <A>(result: Result.Result<A, Schema.SchemaError>): A | string => {
    if (Result.isSuccess(result)) return result.success
    const problem = firstProblemAt(result.failure.issue)
    return `the ${tool} event is not valid at $.${inputKey}${problem.at}: ${problem.message}`
  }
  const raw = o[inputKey]
  const input = tool === "Write" ? decode(decodeWrite(raw)) : tool === "Edit" ? decode(decodeEdit(raw)) : decode(decodeMultiEdit(raw))
  if (typeof input === "string") return input
  const mapped = mapPath(input.file_path)
  if ("refused" in mapped) return mapped
  const p = mapped.path
  const problems: Array<string> = []
  const original = typeof response === "object" && response !== null ? response["originalFile"] : undefined
  if ("content" in input) {
    // Only a Write's input has `content` (decoding keeps only the keys a schema names).
    const content = input.content
    const type = typeof response === "object" && response !== null ? asString(response["type"]) : undefined
    const created = type === "create" || original === null
    const before = typeof original === "string" ? original : undefined
    const lines = content === "" ? [] : content.replace(/\n$/, "").split("\n")
    return {
      changes: [{
        kind: created ? "add" : "replace",
        path: p,
        ...(before === undefined ? {} : { before }),
        after: content,
        binary: false,
        text: [`--- ${created ? "/dev/null" : `a/${p}`}`, `+++ b/${p}`, `@@ write @@`, ...lines.map((l) => `+${l}`)].join("\n") +
          "\n",
        added: lines.length,
        removed: 0,
        hunks: []
      }],
      problems
    }
  }
  const edits: Array<Edit> = ("edits" in input ? input.edits : [input]).map((e) => ({
    old: e.old_string,
    new: e.new_string,
    all: e.replace_all === true
  }))
  const rendered = editText(p, edits)
  let before: string | undefined
  let after: string | undefined
  if (typeof original === "string") {
    before = original
    after = applyEdits(original, edits)
    if (after === undefined) problems.push(`${p}: an edit's old_string is not in the event's originalFile`)
  }
  return {
    changes: [{
      kind: "update",
      path: p,
      ...(before === undefined ? {} : { before }),
      ...(after === undefined ? {} : { after }),
      binary: false,
      text: rendered.text,
      added: rendered.added,
      removed: rendered.removed,
      hunks: edits.map((e) => ({ old: e.old.split("\n"), new: e.new.split("\n"), all: e.all }))
    }],
    problems
  }
}

/**
 * Parses an event of either format: the parsed event, a path the mapper refused, or why the
 * text is not an event of the format.
 */
export const parseEvent = (format: ProviderFormat, text: string, mapPath: PathMapper): ParsedEvent | string | PathRefused =>
  format === "codex-turn-diff" ? parseCodexTurnDiff(text, mapPath) : parseClaudeToolEvent(text, mapPath)

/** The provider's own diff text for `path` in a stored event (for the record-diff view). */
export const claimedDiff = (
  format: string,
  payload: string,
  path: string
): { readonly text: string; readonly added: number; readonly removed: number } | undefined => {
  if (format !== "codex-turn-diff" && format !== "claude-tool-event") return undefined
  // Paths were mapped at ingestion; the stored payload is re-read as is, so accept any path.
  const parsed = parseEvent(format, payload, (raw) => ({ path: raw }))
  if (typeof parsed === "string" || "refused" in parsed) return undefined
  const change = parsed.changes.find((c) => c.path === path || path.endsWith(`/${c.path}`) || c.path.endsWith(`/${path}`))
  return change === undefined ? undefined : { text: change.text, added: change.added, removed: change.removed }
}
