/**
 * Helpers for the join's end-to-end tests (`join.test.ts`, `join.badinput.test.ts`): plans of
 * scripted children, one `forkjoin run --json` decoded with the run's own schemas, any other
 * `--json` command, workspace files as bytes, the history records of a workspace, and an
 * exported changeset copied next to another plan.
 *
 * Owns nothing the CLI does; it only drives the built bundle (`helpers.ts`) and reads files.
 */
import { ChildOutcome, MergePlan, MergeRunStatus } from "@forkjoin/schema/MergeRun"
import { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { defaultDb, makeSandbox, readHistory, runCli, workspaceTree } from "./helpers.ts"

/** A patch from its body lines (no trailing newline, as a model would send it). */
export const patchOf = (...body: ReadonlyArray<string>): string => ["*** Begin Patch", ...body, "*** End Patch"].join("\n")

/** A mutating scripted child: one `apply_patch` per patch body, then `finish`. */
export const editTask = (id: string, scope: ReadonlyArray<string>, ...patches: ReadonlyArray<ReadonlyArray<string>>) => ({
  id,
  mode: "transactional_write",
  writeScope: scope,
  actions: [...patches.map((body) => ({ apply_patch: { patch: patchOf(...body) } })), { finish: {} }]
})

/** A plan (schemaVersion 1) of `tasks`, with plan-level fields (`between`, `resolve`, `atomic`, `verify`). */
export const planOf = (tasks: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) => ({ schemaVersion: 1, tasks, ...extra })

/** One join test's folders: the workspace, a folder outside it, and the plan file beside `ws/`. */
export interface JoinCase {
  readonly dir: string
  readonly ws: string
  readonly outside: string
  readonly planFile: string
}

/** Writes files (relative path → text or bytes) under `root`, creating parent directories. */
export const writeFiles = (root: string, files: Readonly<Record<string, string | Uint8Array>>): void => {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(root, rel)
    fs.mkdirSync(path.dirname(abs), { recursive: true })
    fs.writeFileSync(abs, content)
  }
}

/** A fresh sandbox whose workspace holds `files`, with `plan` written to `<dir>/plan.json`. */
export const makeCase = (files: Readonly<Record<string, string | Uint8Array>>, plan: unknown): JoinCase => {
  const { dir, ws, outside } = makeSandbox()
  writeFiles(ws, files)
  const planFile = path.join(dir, "plan.json")
  fs.writeFileSync(planFile, typeof plan === "string" ? plan : JSON.stringify(plan))
  return { dir, ws, outside, planFile }
}

/** The `run --json` line, decoded with the schemas the run stores (extra keys ignored). */
export const RunJson = Schema.Struct({
  ok: Schema.Boolean,
  runId: Schema.String,
  mergePlan: MergePlan,
  results: Schema.Array(Schema.Struct({ id: Schema.String, status: Schema.String, artifacts: Schema.String })),
  mergeExecution: Schema.Struct({ status: MergeRunStatus, outcomes: Schema.Array(ChildOutcome) }),
  conflicts: Schema.Array(Schema.Struct({ conflictId: Schema.String, childId: Schema.String, path: Schema.String, status: Schema.String, reason: Schema.String })),
  finish: Schema.Struct({ ok: Schema.Boolean, code: Schema.optionalKey(Schema.String), message: Schema.optionalKey(Schema.String) })
})

/** A decoded `run --json` line. */
export type RunJson = typeof RunJson.Type

const decodeRun = Schema.decodeUnknownSync(RunJson)

/** A finished `run --json`: exit status, stderr and the decoded line. */
export interface Joined {
  readonly status: number | null
  readonly stderr: string
  readonly out: RunJson
}

/** Runs `forkjoin run PLAN --workspace WS --json [...args]`; fails the test when no JSON line came out. */
export const runJoin = (c: JoinCase, options: { readonly args?: ReadonlyArray<string>; readonly env?: Record<string, string>; readonly planFile?: string } = {}): Joined => {
  const r = runCli(["run", options.planFile ?? c.planFile, "--workspace", c.ws, "--json", ...(options.args ?? [])], options.env === undefined ? {} : { env: options.env })
  if (r.stdout === "") throw new Error(`forkjoin run printed nothing (exit ${r.status}, signal ${r.signal}): ${r.stderr}`)
  return { status: r.status, stderr: r.stderr, out: decodeRun(JSON.parse(r.stdout)) }
}

/** The outcome of child `id` in a run's merge execution; fails the test when it is absent. */
export const outcomeOf = (out: RunJson, id: string): ChildOutcome => {
  const o = out.mergeExecution.outcomes.find((x) => x.childId === id)
  if (o === undefined) throw new Error(`no outcome for child ${id} in ${JSON.stringify(out.mergeExecution)}`)
  return o
}

/** `subagent_merge:<run-id>/<task-id>`, or the atomic join's `subagent_merge:<run-id>`. */
export const mergeTransaction = (runId: string, taskId?: string): string =>
  taskId === undefined ? `subagent_merge:${runId}` : `subagent_merge:${runId}/${taskId}`

/** Runs any `forkjoin` command with `--json` appended; `json` is its parsed stdout line (undefined when none). */
export const cliJson = (args: ReadonlyArray<string>, env?: Record<string, string>) => {
  const r = runCli([...args, "--json"], env === undefined ? {} : { env })
  // The parsed line is checked field by field by each test.
  const json: any = r.stdout === "" ? undefined : JSON.parse(r.stdout)
  return { status: r.status, stderr: r.stderr, json }
}

/** The bytes of `rel` in the workspace, or `undefined` when there is no such file. */
export const bytesAt = (ws: string, rel: string): Buffer | undefined => {
  const abs = path.join(ws, rel)
  return fs.existsSync(abs) ? fs.readFileSync(abs) : undefined
}

/** The text of `rel` in the workspace (UTF-8), or `undefined` when there is no such file. */
export const textAt = (ws: string, rel: string): string | undefined => bytesAt(ws, rel)?.toString("utf8")

const decodeRecord = Schema.decodeUnknownSync(PatchHistoryRecord)

/** Every record of the workspace's history, in commit order, decoded (none when there is no database). */
export const recordsOf = (ws: string): ReadonlyArray<PatchHistoryRecord> =>
  fs.existsSync(defaultDb(ws)) ? readHistory(defaultDb(ws)).records.map((r) => decodeRecord(r)) : []

/** The user-visible files among `paths` (absent ones included as `undefined`), for "these paths are untouched" checks. */
export const filesAt = (ws: string, paths: ReadonlyArray<string>): Record<string, string | undefined> =>
  Object.fromEntries(paths.map((p) => [p, bytesAt(ws, p)?.toString("base64")]))

/** What `filesAt` should read for these expected texts (`undefined` = no file). */
export const asFiles = (files: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> =>
  Object.fromEntries(Object.entries(files).map(([p, t]) => [p, t === undefined ? undefined : Buffer.from(t).toString("base64")]))

/**
 * Exports `tasks` with `run --export-only` in a fresh workspace holding `files`; returns that
 * case (`source`), its tree before the run, and each task's namespace folder (`changeset.json`,
 * `blobs/sha256/<hex>`) by id.
 */
export const exportChangesets = (files: Readonly<Record<string, string | Uint8Array>>, tasks: ReadonlyArray<{ readonly id: string }>) => {
  const c = makeCase(files, planOf(tasks))
  const before = workspaceTree(c.ws)
  const r = runCli(["run", c.planFile, "--workspace", c.ws, "--json", "--export-only"])
  if (r.status !== 0) throw new Error(`export-only run failed (exit ${r.status}): ${r.stderr}${r.stdout}`)
  const out = JSON.parse(r.stdout) as { runId: string }
  return {
    source: c,
    before,
    namespace: (id: string) => path.join(c.ws, ".forkjoin", "runs", out.runId, "subagents", id)
  }
}

/**
 * Copies a child's exported namespace (`changeset.json` and `blobs/`) to `<dir>/<name>/`, so a
 * plan in `dir` can name it as `changesetFile: "<name>/changeset.json"`; returns that folder.
 */
export const copyChangeset = (namespace: string, dir: string, name: string): string => {
  const to = path.join(dir, name)
  fs.mkdirSync(to, { recursive: true })
  fs.copyFileSync(path.join(namespace, "changeset.json"), path.join(to, "changeset.json"))
  const blobs = path.join(namespace, "blobs")
  if (fs.existsSync(blobs)) fs.cpSync(blobs, path.join(to, "blobs"), { recursive: true })
  return to
}
