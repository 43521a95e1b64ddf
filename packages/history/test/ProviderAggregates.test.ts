/**
 * Provider aggregates (SPEC §4.6): Codex turn diffs and Claude tool events become partial
 * (or uncertain) records with the provider's authority; verification adds a linked record and
 * never edits the original; malformed input writes nothing.
 */
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { ProviderAggregates } from "@forkjoin/history/ProviderAggregates"
import { Sqlite } from "@forkjoin/history/Sqlite"
import { HistoryViews } from "@forkjoin/history/Views"
import { assert, describe, it } from "@effect/vitest"
import { EnvironmentId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { sha256 } from "./fixtures.ts"
import { draftOf } from "./viewFixtures.ts"

const env = EnvironmentId.make("env-pa")

const withWorkspace = <A, E>(
  body: (ws: string) => Effect.Effect<A, E, ProviderAggregates | HistoryViews | HistoryStore | Sqlite>
) =>
  Effect.gen(function*() {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-pa-")))
    const ws = path.join(dir, "ws")
    fs.mkdirSync(ws)
    const layer = Layer.mergeAll(
      HistoryViews.layerWithStore(path.join(dir, "h.db"), { environmentId: env, root: ws }),
      ProviderAggregates.layerNoDeps({ environmentId: env, root: ws }).pipe(
        Layer.provide(HistoryViews.layerWithStore(path.join(dir, "h.db"), { environmentId: env, root: ws }))
      )
    ).pipe(Layer.orDie)
    return yield* body(ws).pipe(Effect.provide(layer), Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))))
  })

const CODEX_DIFF = [
  "diff --git a/src/app.ts b/src/app.ts",
  "index 1111111..2222222 100644",
  "--- a/src/app.ts",
  "+++ b/src/app.ts",
  "@@ -1,3 +1,3 @@",
  " const a = 1",
  "-const b = 2",
  "+const b = 3",
  " export { a, b }",
  "diff --git a/docs/new.md b/docs/new.md",
  "new file mode 100644",
  "--- /dev/null",
  "+++ b/docs/new.md",
  "@@ -0,0 +1,2 @@",
  "+# New",
  "+text",
  "diff --git a/old.txt b/old.txt",
  "deleted file mode 100644",
  "--- a/old.txt",
  "+++ /dev/null",
  "@@ -1 +0,0 @@",
  "-bye",
  "diff --git a/x/from.txt b/y/to.txt",
  "similarity index 100%",
  "rename from x/from.txt",
  "rename to y/to.txt",
  ""
].join("\n")

const rowCounts = () =>
  Effect.flatMap(Sqlite, (sql) =>
    sql.run("test", (c) => ({
      records: c.get<{ n: number }>("SELECT count(*) AS n FROM records")!.n,
      events: c.get<{ n: number }>("SELECT count(*) AS n FROM provider_events")!.n,
      snapshots: c.get<{ n: number }>("SELECT count(*) AS n FROM snapshots")!.n
    })))

describe("ProviderAggregates", () => {
  it.effect("ingests a Codex turn diff as a partial codex_aggregate_event record with its event", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const pa = yield* ProviderAggregates
        const views = yield* HistoryViews
        const r = yield* pa.ingest({ format: "codex-turn-diff", text: CODEX_DIFF, threadId: "T", turnId: "turn-1" })
        assert.deepStrictEqual(
          [r.authority, r.provenance, r.exactness, r.outcome],
          ["codex_aggregate_event", "provider_aggregate", "partial", "applied"]
        )
        assert.match(r.transactionId, /^provider_aggregate:codex-turn-diff-/)
        assert.deepStrictEqual(r.changes.map((c) => [c.kind, c.path, c.moveFrom]), [
          ["update", "src/app.ts", undefined],
          ["add", "docs/new.md", undefined],
          ["delete", "old.txt", undefined],
          ["move", "y/to.txt", "x/from.txt"]
        ])
        assert.strictEqual(r.changes[0]!.before, undefined)
        assert.strictEqual(r.changes[1]!.after!.hash, sha256(new TextEncoder().encode("# New\ntext\n")))
        assert.strictEqual(r.changes[2]!.before!.hash, sha256(new TextEncoder().encode("bye\n")))
        const page = yield* views.timeline({ caller: "T" })
        assert.deepStrictEqual([page.coverage.providerAggregates, page.coverage.verifiedAggregates, page.coverage.partial], [1, 0, 1])
        const diff = yield* views.diff({ caller: "T", recordId: r.recordId })
        assert.strictEqual(diff.items[0]!.source, "provider_event")
        assert.include(diff.items[0]!.diff, "-const b = 2\n+const b = 3\n")
        assert.strictEqual(diff.items[1]!.source, "blobs")
        assert.strictEqual(diff.items[1]!.diff, "--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,2 @@\n+# New\n+text\n")
        // The same event again is the same record; the same id with another event is refused.
        const again = yield* pa.ingest({ format: "codex-turn-diff", text: CODEX_DIFF, threadId: "T", turnId: "turn-1" })
        assert.strictEqual(again.recordId, r.recordId)
        const id = r.transactionId.slice("provider_aggregate:".length)
        const conflict = yield* Effect.flip(pa.ingest({ format: "codex-turn-diff", text: CODEX_DIFF + "\n", threadId: "T", turnId: "t", id }))
        assert.strictEqual((conflict as any).reason, "Conflict")
      })))

  it.effect("verification adds an exact linked record when the workspace proves the claim, and never edits the original", () =>
    withWorkspace((ws) =>
      Effect.gen(function*() {
        const pa = yield* ProviderAggregates
        const views = yield* HistoryViews
        const sql = yield* Sqlite
        const r = yield* pa.ingest({ format: "codex-turn-diff", text: CODEX_DIFF, threadId: "T", turnId: "turn-1" })
        const originalJson = yield* sql.run("t", (c) => c.get<{ j: string }>("SELECT record_json AS j FROM records WHERE record_id = ?", r.recordId)!.j)
        fs.mkdirSync(path.join(ws, "src"))
        fs.mkdirSync(path.join(ws, "docs"))
        fs.mkdirSync(path.join(ws, "y"))
        fs.writeFileSync(path.join(ws, "src/app.ts"), "// header\nconst a = 1\nconst b = 3\nexport { a, b }\n")
        fs.writeFileSync(path.join(ws, "docs/new.md"), "# New\ntext\n")
        fs.writeFileSync(path.join(ws, "y/to.txt"), "moved\n")
        const v = yield* pa.verify(r.recordId)
        assert.deepStrictEqual([v.exactness, v.outcome, v.links.verifies], ["exact", "applied", r.recordId])
        assert.match(v.transactionId, /^verification:/)
        assert.strictEqual(
          v.changes[0]!.before!.hash,
          sha256(new TextEncoder().encode("// header\nconst a = 1\nconst b = 2\nexport { a, b }\n"))
        )
        const page = yield* views.timeline({ caller: "T" })
        assert.deepStrictEqual([page.coverage.providerAggregates, page.coverage.verifiedAggregates], [1, 1])
        const after = yield* sql.run("t", (c) => c.get<{ j: string }>("SELECT record_json AS j FROM records WHERE record_id = ?", r.recordId)!.j)
        assert.strictEqual(after, originalJson)
        const vdiff = yield* views.diff({ caller: "T", recordId: v.recordId })
        assert.include(vdiff.items[0]!.diff, "-const b = 2\n+const b = 3\n")
        // A workspace that contradicts the claim gives an uncertain verification, not a verified aggregate.
        fs.writeFileSync(path.join(ws, "src/app.ts"), "const b = 4\n")
        const bad = yield* pa.verify(r.recordId)
        assert.deepStrictEqual([bad.exactness, bad.outcome], ["uncertain", "partial"])
        assert.include(bad.warnings.map((w) => w.code), "verification_mismatch")
      })))

  it.effect("malformed events fail clearly and write nothing, alone or in a batch", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const pa = yield* ProviderAggregates
        const before = yield* rowCounts()
        const cases = [
          { format: "codex-turn-diff" as const, text: "" },
          { format: "codex-turn-diff" as const, text: "hello\nworld\n" },
          { format: "codex-turn-diff" as const, text: "--- a/x\n@@ -1 +1 @@\n" },
          { format: "codex-turn-diff" as const, text: "--- a/x\n+++ b/x\n@@ what @@\n" },
          { format: "claude-tool-event" as const, text: "{not json" },
          { format: "claude-tool-event" as const, text: JSON.stringify({ tool_name: "Bash", tool_input: { command: "ls" } }) },
          { format: "claude-tool-event" as const, text: JSON.stringify({ tool_name: "Edit", tool_input: { file_path: "a.txt" } }) }
        ]
        for (const c of cases) {
          const e = yield* Effect.flip(pa.ingest({ ...c, threadId: "T", turnId: "t" }))
          assert.strictEqual((e as any).reason, "Malformed", c.text)
          assert.isAbove((e as any).message.length, 20)
        }
        const outside = yield* Effect.flip(pa.ingest({
          format: "claude-tool-event",
          text: JSON.stringify({ tool_name: "Write", tool_input: { file_path: "/etc/passwd", content: "x" } }),
          threadId: "T",
          turnId: "t"
        }))
        assert.strictEqual((outside as any).reason, "PathRefused")
        const batch = yield* Effect.flip(pa.ingestMany([
          { format: "codex-turn-diff", text: CODEX_DIFF, threadId: "T", turnId: "t" },
          { format: "codex-turn-diff", text: "garbage", threadId: "T", turnId: "t" }
        ]))
        assert.include((batch as any).message, "event 2")
        assert.deepStrictEqual(yield* rowCounts(), before)
      })))

  it.effect("an event claiming a denied path (.git, .forkjoin, at any depth) is refused and records nothing", () =>
    withWorkspace((ws) =>
      Effect.gen(function*() {
        const pa = yield* ProviderAggregates
        fs.mkdirSync(path.join(ws, ".git"))
        fs.writeFileSync(path.join(ws, ".git", "config"), "[credential] token = s3cret\n")
        const before = yield* rowCounts()
        const diffOf = (from: string, to: string) =>
          `diff --git a/${from} b/${to}\n--- a/${from}\n+++ b/${to}\n@@ -1 +1 @@\n-old\n+new\n`
        const write = (file_path: string) =>
          JSON.stringify({ tool_name: "Write", tool_input: { file_path, content: "x\n" }, tool_response: { type: "create" } })
        const cases = [
          { format: "codex-turn-diff" as const, text: diffOf(".git/config", ".git/config") },
          { format: "codex-turn-diff" as const, text: diffOf("sub/.forkjoin/x", "sub/.forkjoin/x") },
          { format: "codex-turn-diff" as const, text: diffOf("a.txt", "deep/.git/hooks/pre-commit") },
          { format: "codex-turn-diff" as const, text: CODEX_DIFF + "\n" + diffOf(".GIT/config", ".GIT/config") },
          { format: "claude-tool-event" as const, text: write(".git/config") },
          { format: "claude-tool-event" as const, text: write(path.join(ws, "sub", ".forkjoin", "x")) },
          { format: "claude-tool-event" as const, text: write("sub/../.forkjoin/identity") }
        ]
        for (const c of cases) {
          const e = yield* Effect.flip(pa.ingest({ ...c, threadId: "T", turnId: "t" }))
          assert.strictEqual(e._tag === "IngestError" ? e.reason : e._tag, "PathDenied", c.text)
          assert.include(e.message, "denied pattern")
        }
        const batch = yield* Effect.flip(pa.ingestMany([
          { format: "codex-turn-diff", text: CODEX_DIFF, threadId: "T", turnId: "t" },
          { ...cases[0]!, threadId: "T", turnId: "t" }
        ]))
        assert.strictEqual(batch._tag === "IngestError" ? batch.reason : batch._tag, "PathDenied")
        assert.deepStrictEqual(yield* rowCounts(), before)
      })))

  it.effect("verifying an event stored before denied paths were refused does not read the denied file", () =>
    withWorkspace((ws) =>
      Effect.gen(function*() {
        const pa = yield* ProviderAggregates
        const store = yield* HistoryStore
        fs.mkdirSync(path.join(ws, ".git"))
        fs.writeFileSync(path.join(ws, ".git", "config"), "[credential] token = s3cret\n")
        const text = JSON.stringify({ tool_name: "Write", tool_input: { file_path: ".git/config", content: "x\n" } })
        // What an older ingestion stored: the record and its raw event.
        const old = yield* store.appendRecord({
          ...draftOf(env, "T", "t", [{ add: ".git/config", after: "x\n" }]),
          provenance: "provider_aggregate",
          authority: "managed_claude_patch_engine",
          exactness: "partial"
        }, 0)
        yield* Effect.flatMap(Sqlite, (sql) =>
          sql.run("test", (c) => c.run("INSERT INTO provider_events (record_id, format, payload) VALUES (?, ?, ?)", old.recordId, "claude-tool-event", text)))
        const before = yield* rowCounts()
        const e = yield* Effect.flip(pa.verify(old.recordId))
        assert.strictEqual(e._tag === "IngestError" ? e.reason : e._tag, "PathDenied")
        assert.notInclude(e.message, "s3cret")
        assert.deepStrictEqual(yield* rowCounts(), before)
      })))

  it.effect("a path whose '..' stays inside the workspace is ingested under the path it names; one that escapes is refused", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const pa = yield* ProviderAggregates
        const write = (file_path: string) => ({
          format: "claude-tool-event" as const,
          text: JSON.stringify({ tool_name: "Write", tool_input: { file_path, content: "x\n" } }),
          threadId: "T",
          turnId: "t"
        })
        const r = yield* pa.ingest(write("sub/../a.txt"))
        assert.deepStrictEqual(r.changes.map((c) => c.path), ["a.txt"])
        const refused = yield* Effect.flip(pa.ingest(write("sub/../../a.txt")))
        assert.strictEqual(refused._tag === "IngestError" ? refused.reason : refused._tag, "PathRefused")
        const empty = yield* Effect.flip(pa.ingest(write("sub/..")))
        assert.strictEqual(empty._tag === "IngestError" ? empty.reason : empty._tag, "PathRefused")
      })))

  it.effect("a diff whose hunks do not add up is ingested as uncertain", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const pa = yield* ProviderAggregates
        const r = yield* pa.ingest({
          format: "codex-turn-diff",
          text: "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n",
          threadId: "T",
          turnId: "t"
        })
        assert.strictEqual(r.exactness, "uncertain")
        assert.deepStrictEqual(r.warnings.map((w) => w.code), ["unparsed_input"])
      })))

  it.effect("ingests Claude Edit, MultiEdit and Write events as managed_claude_patch_engine records", () =>
    withWorkspace((ws) =>
      Effect.gen(function*() {
        const pa = yield* ProviderAggregates
        const edit = yield* pa.ingest({
          format: "claude-tool-event",
          text: JSON.stringify({
            session_id: "s",
            tool_name: "Edit",
            tool_input: { file_path: path.join(ws, "src/a.ts"), old_string: "one", new_string: "two" },
            tool_response: { filePath: path.join(ws, "src/a.ts"), originalFile: "x one y\n" }
          }),
          threadId: "T",
          turnId: "t"
        })
        assert.deepStrictEqual([edit.authority, edit.provenance, edit.exactness], ["managed_claude_patch_engine", "provider_aggregate", "partial"])
        assert.strictEqual(edit.changes[0]!.path, "src/a.ts")
        assert.strictEqual(edit.changes[0]!.after!.hash, sha256(new TextEncoder().encode("x two y\n")))
        const multi = yield* pa.ingest({
          format: "claude-tool-event",
          text: JSON.stringify({
            type: "tool_use",
            name: "MultiEdit",
            id: "toolu_1",
            input: { file_path: "b.ts", edits: [{ old_string: "a", new_string: "b" }, { old_string: "c", new_string: "d" }] }
          }),
          threadId: "T",
          turnId: "t"
        })
        assert.deepStrictEqual([multi.changes[0]!.kind, multi.changes[0]!.before, multi.changes[0]!.after], ["update", undefined, undefined])
        const write = yield* pa.ingest({
          format: "claude-tool-event",
          text: JSON.stringify({ tool_name: "Write", tool_input: { file_path: "w.txt", content: "w\n" }, tool_response: { type: "create" } }),
          threadId: "T",
          turnId: "t"
        })
        assert.strictEqual(write.changes[0]!.kind, "add")
        fs.writeFileSync(path.join(ws, "b.ts"), "b d x\n")
        const v = yield* pa.verify(multi.recordId)
        assert.strictEqual(v.exactness, "exact")
        assert.strictEqual(v.changes[0]!.before!.hash, sha256(new TextEncoder().encode("a c x\n")))
        // replace_all cannot be undone with certainty: the verification stays uncertain.
        const all = yield* pa.ingest({
          format: "claude-tool-event",
          text: JSON.stringify({ tool_name: "Edit", tool_input: { file_path: "b.ts", old_string: "x", new_string: "d", replace_all: true } }),
          threadId: "T",
          turnId: "t"
        })
        assert.strictEqual((yield* pa.verify(all.recordId)).exactness, "uncertain")
      })))
})
