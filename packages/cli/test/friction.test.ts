/**
 * Friction a newcomer hit (issue 9), through the built CLI and the history views: help text
 * with a description and an example for every view and no SPEC references, `history diff` by
 * record id, transaction id or `#N`, a timeline line that stays short for a 10,000-file record
 * and a coverage line that says it counts the page, and a re-ingested event reported as
 * "already recorded".
 */
import { assert, it as effectIt } from "@effect/vitest"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { HistoryViews } from "@forkjoin/history/Views"
import { EnvironmentId, PatchHistoryRecord, TransactionId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { commit, draftOf, fork } from "../../history/test/viewFixtures.ts"
import { renderText } from "../src/History.ts"
import { buildCli, makeSandbox, patch, removeSandboxes, runCli, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const jsonLine = (stdout: string): any => {
  const lines = stdout.trimEnd().split("\n")
  expect(lines).toHaveLength(1)
  return JSON.parse(lines[0]!)
}

const applyOk = (ws: string, text: string) => {
  const r = runCli(["apply", "-", "--workspace", ws, "--json"], { stdin: text })
  expect(r.status, r.stderr).toBe(0)
  return jsonLine(r.stdout).record
}

describe("help text", () => {
  it("cites no SPEC section; timeline, turn, diff and file each have a description and an example", () => {
    const views = ["timeline", "turn", "diff", "file"]
    const top = runCli(["--help"]).stdout
    const commands = [...top.slice(top.indexOf("SUBCOMMANDS")).matchAll(/^ {2}(\S+) /gm)].map((m) => m[1]!)
    expect(commands).toEqual(expect.arrayContaining(["apply", "run", "history", "repair"]))
    expect(top).not.toMatch(/SPEC|§/)
    const history = ["history", ...views, "ingest", "verify", "export-git"].map((v) => v === "history" ? [v] : ["history", v])
    for (const args of [...commands.filter((c) => c !== "history").map((c) => [c]), ...history]) {
      const r = runCli([...args, "--help"])
      expect(r.status, args.join(" ")).toBe(0)
      expect(r.stdout, args.join(" ")).not.toMatch(/SPEC|§/)
    }
    for (const view of views) {
      const help = runCli(["history", view, "--help"]).stdout
      // The description paragraph, wrapped to 80 columns through a pipe.
      const description = /^DESCRIPTION\n((?: {2}\S.*\n)+)/m.exec(help)
      expect(description?.[1]?.replace(/\s+/g, " ").trim().length ?? 0, view).toBeGreaterThan(80)
      const examples = help.slice(help.indexOf("EXAMPLES\n"))
      expect(help, view).toContain("EXAMPLES\n")
      expect(examples, view).toContain(`  forkjoin history ${view} `)
    }
  })
})

describe("forkjoin history diff RECORD", () => {
  it("takes a record id, a transaction id or #N alike; an unknown one names the three forms", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "one\ntwo\n" })
    applyOk(ws, patch("*** Add File: b.txt", "+b"))
    const second = applyOk(ws, patch("*** Update File: a.txt", "@@", " one", "-two", "+2"))
    const diff = (target: string) => runCli(["history", "diff", target, "--workspace", ws, "--json"])
    const byRecord = jsonLine(diff(second.recordId).stdout)
    expect(byRecord.items.map((i: any) => i.diff)).toEqual(["--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"])
    const { nextCursor: _a, ...expected } = byRecord
    for (const target of [second.transactionId, `#${second.commitOrdinal}`]) {
      const { nextCursor: _b, ...page } = jsonLine(diff(target).stdout)
      expect(page, target).toEqual(expected)
    }
    expect(jsonLine(diff("#1").stdout).items.map((i: any) => i.path)).toEqual(["b.txt"])
    const text = runCli(["history", "diff", second.transactionId, "--workspace", ws])
    expect(text.stdout).toContain("-two\n+2\n")
    const missing = runCli(["history", "diff", "#99", "--workspace", ws])
    expect(missing.status).toBe(1)
    expect(missing.stderr).toContain("#N")
    expect(missing.stderr).toContain("transaction id")
  })

  const env = EnvironmentId.make("env-friction")

  effectIt.effect("a transaction's records show in commit order, paged across records, within the caller's scope", () =>
    Effect.gen(function*() {
      const views = yield* HistoryViews
      const store = yield* HistoryStore
      const shared = TransactionId.make(`patch:${randomUUID()}`)
      const first = yield* store.appendRecord(
        { ...draftOf(env, "A", "t", [{ add: "x", after: "1\n" }, { add: "y", after: "2\n" }]), transactionId: shared },
        Date.parse("2026-11-29T12:00:00.000Z")
      )
      yield* commit(env, "A", "t", [{ add: "other", after: "o\n" }])
      const second = yield* store.appendRecord(
        { ...draftOf(env, "A", "t", [{ update: "x", before: "1\n", after: "3\n" }]), transactionId: shared },
        Date.parse("2026-11-29T12:00:05.000Z")
      )
      const all = yield* views.diff({ caller: "A", target: shared })
      assert.deepStrictEqual(all.items.map((i) => `${i.kind} ${i.path}`), ["add x", "add y", "update x"])
      assert.strictEqual(all.coverage.records, 2)
      assert.isNull(all.nextCursor)
      // One item per page: the cursor walks across the two records and never repeats or skips.
      const walked: Array<string> = []
      let cursor: string | undefined
      for (let pages = 0; pages < 5; pages++) {
        const page = yield* views.diff({ caller: "A", target: shared, limit: 1, cursor })
        walked.push(...page.items.map((i) => `${i.kind} ${i.path}`))
        if (page.nextCursor === null) break
        cursor = page.nextCursor
      }
      assert.deepStrictEqual(walked, ["add x", "add y", "update x"])
      const byOrdinal = yield* views.diff({ caller: "A", target: `#${second.commitOrdinal}` })
      assert.deepStrictEqual(byOrdinal.items.map((i) => i.path), ["x"])
      const byRecordId = yield* views.diff({ caller: "A", recordId: first.recordId })
      assert.deepStrictEqual(byRecordId.items.map((i) => i.path), ["x", "y"])
      // `recordId` stays exact: a transaction id there is not a record.
      const notARecord = yield* Effect.flip(views.diff({ caller: "A", recordId: shared }))
      assert.strictEqual(notARecord.reason, "NotFound")
      const both = yield* Effect.flip(views.diff({ caller: "A", recordId: first.recordId, target: shared }))
      assert.strictEqual(both.reason, "InvalidRequest")
      // A child of A sees its own thread and descendants only: none of A's records, by any name.
      yield* fork("A-child", "A")
      for (const target of [shared, `#${first.commitOrdinal}`, first.recordId]) {
        const hidden = yield* Effect.flip(views.diff({ caller: "A-child", target }))
        assert.strictEqual(hidden.reason, "NotFound")
      }
    }).pipe(Effect.provide(HistoryViews.layerWithStore(":memory:", { environmentId: env }))))
})

describe("history timeline text", () => {
  it("lists the first 10 paths of a 10,000-file record, then how many more; the coverage line says it is the page's", () => {
    const snap = { hash: `sha256:${"0".repeat(64)}`, bytes: 1, encoding: "utf8", lineEnding: "none", finalNewline: false, mode: 0o644 }
    const record = Schema.decodeUnknownSync(PatchHistoryRecord)({
      ...draftOf(EnvironmentId.make("env-big"), "cli", "t", []),
      schemaVersion: 1,
      changes: Array.from({ length: 10_000 }, (_, i) => ({ kind: "add", path: `src/f${i}.txt`, after: snap })),
      commitOrdinal: 1,
      committedAt: "2026-11-29T12:00:00.000Z"
    })
    const text = renderText({
      view: "timeline",
      page: {
        items: [record],
        coverage: { records: 1, exact: 1, partial: 0, uncertain: 0, gaps: 0, providerAggregates: 0, verifiedAggregates: 0 },
        truncated: false,
        nextCursor: "next",
        caps: { limit: 1, limitClamped: false, maxBytes: 1024, bytesCapApplied: false }
      }
    })
    const [line, coverage] = text.split("\n")
    expect(line!.length).toBeLessThan(400)
    expect(line).toContain("A src/f0.txt, ")
    expect(line).toContain("A src/f9.txt, … and 9990 more")
    expect(line).not.toContain("src/f10.txt")
    expect(coverage).toMatch(/^coverage \(this page\): 1 records/)
  })

  it("through the CLI: a 12-file record is one short line, and a turn's coverage is not the page's", () => {
    const { ws } = makeSandbox()
    applyOk(ws, patch(...Array.from({ length: 12 }, (_, i) => [`*** Add File: d/f${i}.txt`, "+x"]).flat()))
    applyOk(ws, patch("*** Add File: e.txt", "+e"))
    const page = runCli(["history", "timeline", "--workspace", ws, "--limit", "1"]).stdout.split("\n")
    expect(page[0]).toMatch(/: A d\/f0\.txt, .*A d\/f9\.txt, … and 2 more$/)
    expect(page[1]).toMatch(/^coverage \(this page\): 1 records/)
    expect(page[2]).toMatch(/^more: --cursor /)
    const turn = runCli(["history", "turn", "cli", "--workspace", ws]).stdout
    expect(turn).toMatch(/^coverage: 2 records/m)
  })
})

describe("history ingest", () => {
  it("the same event again is 'already recorded', not 'ingested', and writes nothing", () => {
    const { dir, ws } = makeSandbox()
    const event = path.join(dir, "event.json")
    fs.writeFileSync(event, JSON.stringify({ tool_name: "Write", tool_input: { file_path: "c.txt", content: "c\n" } }))
    const ingest = (...flags: Array<string>) =>
      runCli(["history", "ingest", "--format", "claude-tool-event", event, "--workspace", ws, ...flags])
    const first = ingest()
    expect(first.status, first.stderr).toBe(0)
    expect(first.stdout).toMatch(/^ingested rec-pa-/)
    const recordId = /^ingested (\S+)/.exec(first.stdout)![1]
    const again = ingest()
    expect(again.status, again.stderr).toBe(0)
    expect(again.stdout).toMatch(new RegExp(`^already recorded ${recordId} `))
    const json = jsonLine(ingest("--json").stdout)
    expect([json.ok, json.alreadyRecorded, json.record.recordId]).toEqual([true, true, recordId])
    const timeline = jsonLine(runCli(["history", "timeline", "--workspace", ws, "--json"]).stdout)
    expect(timeline.items.map((r: any) => r.recordId)).toEqual([recordId])
    // A different event is ingested, and says so.
    fs.writeFileSync(event, JSON.stringify({ tool_name: "Write", tool_input: { file_path: "d.txt", content: "d\n" } }))
    const other = jsonLine(ingest("--json").stdout)
    expect([other.alreadyRecorded, other.record.recordId === recordId]).toEqual([false, false])
  })
})
