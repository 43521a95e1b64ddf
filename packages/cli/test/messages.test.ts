/**
 * What the CLI tells a user (issue 9 items 8 and 9, and stage names) through the built bundle:
 * `apply --help` says what each profile does to an existing file, `--allow-overwrite` grants
 * it and a refusal names that flag, a replaced file (by Add File or Move to) shows in `apply`,
 * `history diff` and `history file`, the `--json` help of `ingest`/`verify`/`export-git` shows their real shapes,
 * a verification mismatch exits 1, and errors carry `stageName` (human text uses the name).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { failureOutput, renderEngineError } from "../src/internal/errors.ts"
import { EngineError, toBody } from "@forkjoin/schema/EngineError"
import { Stage, StageNumber } from "@forkjoin/schema/ErrorCode"
import * as Schema from "effect/Schema"
import { appliedSummary, buildCli, json, makeSandbox, patch, removeSandboxes, runCli, workspaceTree, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const apply = (ws: string, text: string, ...args: Array<string>) => runCli(["apply", "--workspace", ws, ...args], { stdin: text })

/** The help entry of flag `flag` in `help`, its wrapped continuation lines joined with spaces. */
const flagLine = (help: string, flag: string): string => {
  const lines = help.split("\n")
  // A flag's row: the flag (and its value's name), then the padding before its description.
  const at = lines.findIndex((l) => l.trimStart().startsWith(`${flag} `) && /^ *\S+(?: \S+)* {2,}\S/.test(l))
  expect(at, `${flag} in help`).toBeGreaterThanOrEqual(0)
  const column = /^ *\S+(?: \S+)* {2,}/.exec(lines[at]!)?.[0].length ?? Infinity
  const entry = [lines[at]!]
  for (let i = at + 1; i < lines.length && /^ +\S/.test(lines[i]!) && lines[i]!.search(/\S/) >= column; i++) entry.push(lines[i]!.trim())
  return entry.join(" ")
}

describe("apply and existing files (item 8)", () => {
  it("--help says what each profile does to an existing file and lists --allow-overwrite", () => {
    const help = runCli(["apply", "--help"])
    expect(help.status).toBe(0)
    const profile = flagLine(help.stdout, "--profile")
    expect(profile).toMatch(/native[^.]*never replaces an existing file[^.]*--allow-overwrite/)
    expect(profile).toMatch(/codex[^.]*replaces an existing file on Add File and Move to/)
    expect(flagLine(help.stdout, "--allow-overwrite")).toMatch(/Add File.*Move to.*existing file/)
    expect(help.stdout).not.toMatch(/no overwrite\b/)
  })

  it("native refuses an Add File onto an existing file naming --allow-overwrite; with the flag it replaces and says so", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "old\n" })
    const add = patch("*** Add File: a.txt", "+new")
    const refused = apply(ws, add, "--json")
    expect(refused.status).toBe(1)
    const error = json(refused.stdout).error
    expect(error.code).toBe("target_exists")
    expect(error.message).toMatch(/forkjoin apply --allow-overwrite/)
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("old\n")

    const granted = apply(ws, add, "--allow-overwrite")
    expect(granted.status, granted.stderr).toBe(0)
    expect(appliedSummary(granted.stdout)).toBe(
      "Success. Updated the following files:\nA a.txt\nnote: a.txt replaced an existing file (its previous content is in the patch history)\n"
    )
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("new\n")
  })

  it("--allow-overwrite lets a native Move to replace its destination", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "a\n", "b.txt": "b\n" })
    const move = patch("*** Update File: a.txt", "*** Move to: b.txt", "@@", "-a", "+c")
    expect(json(apply(ws, move, "--json").stdout).error).toMatchObject({ code: "unsafe_move", message: expect.stringMatching(/--allow-overwrite/) })
    const r = apply(ws, move, "--allow-overwrite")
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/\nnote: b\.txt replaced an existing file \(moved from a\.txt; /)
    expect(workspaceTree(ws)).toEqual({ "b.txt": `file 644 ${Buffer.from("c\n").toString("base64")}` })
  })

  it("codex replaces on Add File and Move to, and the human output, history diff and history file say so", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "old\n", "m.txt": "m\n", "dest.txt": "dest\n", "plain.txt": "p\n" })
    const added = apply(ws, patch("*** Add File: a.txt", "+new"), "--profile", "codex")
    expect(added.status, added.stderr).toBe(0)
    expect(added.stdout).toMatch(/^Success\. Updated the following files:\nA a\.txt\nnote: a\.txt replaced an existing file/)
    const moved = apply(ws, patch("*** Update File: m.txt", "*** Move to: dest.txt", "@@", "-m", "+n"), "--profile", "codex", "--json")
    expect(moved.status, moved.stderr).toBe(0)
    const moveRecord = json(moved.stdout).record
    // An ordinary edit gets no note.
    const plain = apply(ws, patch("*** Update File: plain.txt", "@@", "-p", "+q"), "--profile", "codex")
    expect(appliedSummary(plain.stdout)).toBe("Success. Updated the following files:\nM plain.txt\n")

    const timeline = json(runCli(["history", "timeline", "--workspace", ws, "--json"]).stdout)
    const addRecord = timeline.items[0]
    expect(addRecord.changes[0]).toMatchObject({ kind: "replace", path: "a.txt" })
    const diff = runCli(["history", "diff", addRecord.recordId, "--workspace", ws])
    expect(diff.status, diff.stderr).toBe(0)
    expect(diff.stdout).toMatch(/^# a\.txt replaced an existing file\n--- a\/a\.txt\n\+\+\+ b\/a\.txt\n/)
    const plainDiff = runCli(["history", "diff", timeline.items[2].recordId, "--workspace", ws])
    expect(plainDiff.stdout).not.toMatch(/replaced/)

    // Text output shortens a record id's UUID to its first 8 characters.
    const shortRecord = (id: string) => id.slice(0, "rec-".length + 8)
    const fileA = runCli(["history", "file", "a.txt", "--workspace", ws, "--no-gap-check"])
    expect(fileA.stdout.split("\n")[0]).toMatch(new RegExp(`${shortRecord(addRecord.recordId)} M a\\.txt .*\\(replaced an existing file\\)$`))
    const fileDest = runCli(["history", "file", "dest.txt", "--workspace", ws, "--no-gap-check"])
    expect(fileDest.stdout.split("\n")[0]).toMatch(
      new RegExp(`${shortRecord(moveRecord.recordId)} R m\\.txt -> dest\\.txt .*\\(replaced an existing file\\)$`)
    )
    const filePlain = runCli(["history", "file", "plain.txt", "--workspace", ws, "--no-gap-check"])
    expect(filePlain.stdout).not.toMatch(/replaced/)
  })

  it("history diff notes a codex Move to that replaced an existing file; a move to a new name gets no note", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "m.txt": "m\n", "dest.txt": "dest\n", "n.txt": "n\n" })
    const recordOf = (text: string) => {
      const r = apply(ws, text, "--profile", "codex", "--json")
      expect(r.status, r.stderr).toBe(0)
      return json(r.stdout).record
    }
    const onto = recordOf(patch("*** Update File: m.txt", "*** Move to: dest.txt", "@@", "-m", "+m2"))
    expect(onto.changes[0]).toMatchObject({ kind: "move", moveFrom: "m.txt", path: "dest.txt", overwritten: {} })
    const fresh = recordOf(patch("*** Update File: n.txt", "*** Move to: fresh.txt", "@@", "-n", "+n2"))

    const diff = runCli(["history", "diff", onto.recordId, "--workspace", ws])
    expect(diff.status, diff.stderr).toBe(0)
    expect(diff.stdout).toMatch(/^# dest\.txt replaced an existing file\n--- a\/m\.txt\n\+\+\+ b\/dest\.txt\n/)
    const page = json(runCli(["history", "diff", onto.recordId, "--workspace", ws, "--json"]).stdout)
    expect(page.items[0].overwritten.hash).toBe(onto.changes[0].overwritten.hash)

    const plain = runCli(["history", "diff", fresh.recordId, "--workspace", ws])
    expect(plain.status, plain.stderr).toBe(0)
    expect(plain.stdout).toMatch(/^--- a\/n\.txt\n\+\+\+ b\/fresh\.txt\n/)
    expect(plain.stdout).not.toMatch(/replaced/)
  })
})

describe("history help and verification (item 9)", () => {
  it("the --json help of ingest, verify and export-git shows the shape each prints", () => {
    const shapes: Record<string, RegExp> = {
      ingest: /"record".*"verification"/,
      verify: /"verification"/,
      "export-git": /"ref".*"head".*"exported".*"baselines".*"gitdir"/
    }
    for (const [command, shape] of Object.entries(shapes)) {
      const line = flagLine(runCli(["history", command, "--help"]).stdout, "--json")
      expect(line, command).toMatch(shape)
      expect(line, command).not.toMatch(/"items"|"coverage"|"cursor"|nextCursor/)
    }
    // The views keep the page shape.
    expect(flagLine(runCli(["history", "timeline", "--help"]).stdout, "--json")).toMatch(/"items"/)
  })

  it("a verification mismatch exits 1 (verify and ingest --verify, text and --json); a match exits 0", () => {
    const { dir, ws } = makeSandbox()
    const diffFile = path.join(dir, "turn.diff")
    fs.writeFileSync(diffFile, "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n")
    fs.writeFileSync(path.join(ws, "a.txt"), "keep\nsomething else\n")
    const ingested = runCli(["history", "ingest", "--format", "codex-turn-diff", diffFile, "--workspace", ws, "--json"])
    expect(ingested.status, ingested.stderr).toBe(0)
    const recordId = json(ingested.stdout).record.recordId

    const verified = runCli(["history", "verify", recordId, "--workspace", ws, "--json"])
    expect(verified.status).toBe(1)
    const out = json(verified.stdout)
    expect(out.ok).toBe(false)
    expect(out.error.code).toBe("verification_mismatch")
    expect(out.verification.links.verifies).toBe(recordId)
    expect(out.verification.warnings[0].code).toBe("verification_mismatch")

    const human = runCli(["history", "verify", recordId, "--workspace", ws])
    expect(human.status).toBe(1)
    expect(human.stdout).toMatch(/^verification /)
    expect(human.stderr).toMatch(/^error\[verification_mismatch\]: /)

    const again = runCli(["history", "ingest", "--format", "codex-turn-diff", diffFile, "--workspace", ws, "--id", "second", "--verify", "--json"])
    expect(again.status).toBe(1)
    expect(json(again.stdout)).toMatchObject({ ok: false, error: { code: "verification_mismatch" } })

    fs.writeFileSync(path.join(ws, "a.txt"), "keep\nnew\n")
    const matched = runCli(["history", "verify", recordId, "--workspace", ws, "--json"])
    expect(matched.status, matched.stderr).toBe(0)
    expect(json(matched.stdout)).toMatchObject({ ok: true, verification: { exactness: "exact" } })
  })
})

describe("stage names", () => {
  it("--json carries stage (the number) and stageName; the human text names the stage", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "one\n" })
    const bad = patch("*** Update File: a.txt", "@@", "-nope", "+x")
    const r = apply(ws, bad, "--json")
    expect(r.status).toBe(1)
    expect(json(r.stdout).error).toMatchObject({ code: "context_not_found", stage: 5, stageName: "plan" })
    const human = apply(ws, bad)
    expect(human.stderr).toMatch(/^error\[context_not_found\] \(stage plan\): /)
  })

  it("every stage number maps to its name in the body and the text", () => {
    const names = ["normalize", "parse", "resolve", "authorize", "plan", "lock", "stage", "commit", "persist", "publish"] as const
    expect(Object.keys(Stage)).toEqual(names)
    names.forEach((name, i) => {
      const stage = Schema.decodeUnknownSync(StageNumber)(i + 1)
      expect(Stage[name]).toBe(stage)
      const error = new EngineError({ code: "commit_failed", stage, paths: [], message: "m" })
      expect(toBody(error)).toMatchObject({ stage, stageName: name })
      expect(renderEngineError(toBody(error))).toBe(`error[commit_failed] (stage ${name}): m\n`)
      expect(failureOutput(error, { command: "apply", json: false }).stderr).toBe(`error[commit_failed] (stage ${name}): m\n`)
    })
  })
})
