/**
 * What every probe scenario uses: its context (a scratch folder of its own, the argv that
 * starts the CLI, the assertions it records), building workspaces and plans, running a plan
 * through the real orchestrator in-process (`Run.layer`), exporting a child's changeset,
 * running the CLI in a child process with an explicit environment, and reading the files and
 * the history back.
 *
 * Owns none of forkjoin's behaviour: it only drives the orchestrator, engine and history and
 * reads what they left. Assertions are values (`ProbeAssertion`); a scenario that throws is
 * turned into a failed assertion by `Probe.run`.
 */
import { Engine } from "@forkjoin/engine/Engine"
import * as FaultChannel from "@forkjoin/engine/FaultChannel"
import * as Workspace from "@forkjoin/engine/Workspace"
import { HistoryRecords } from "@forkjoin/history/HistoryStore"
import { killChild } from "@forkjoin/orchestrator/ChildProcesses"
import * as OrchestratorRun from "@forkjoin/orchestrator/Run"
import * as WorkspaceLayer from "@forkjoin/orchestrator/WorkspaceLayer"
import * as Children from "@forkjoin/runtime/Children"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import type { ProbeAssertion } from "@forkjoin/schema/Evidence"
import { ThreadId } from "@forkjoin/schema/Ids"
import type { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

// -------------------------------------------------------------------------------------
// errors
// -------------------------------------------------------------------------------------

/**
 * A scenario could not set itself up or drive a step (not an outcome it checks): the scenario
 * is reported failed with this error named.
 *
 * @category errors
 * @since 0.1.0
 */
export class ScenarioError extends Schema.TaggedError<ScenarioError>()("ScenarioError", {
  operation: Schema.String,
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `${this.operation} failed: ${this.detail}`
  }
}

const failure = (operation: string) => (cause: unknown) =>
  new ScenarioError({ operation, detail: cause instanceof Error ? cause.message : String(cause), cause })

// -------------------------------------------------------------------------------------
// assertions
// -------------------------------------------------------------------------------------

/** A value as canonical JSON (object keys sorted), so equal values print and compare alike. */
export const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof Uint8Array) return Buffer.from(v).toString("utf8")
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v
    return Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  }) ?? "undefined"

/**
 * The assertions of one scenario, in the order it checks them. `detail` is only set on a
 * failure, and says what was seen (the probe scrubs paths and ids out of it and shortens it).
 */
export interface Checks {
  /** Records `name` as passed when `passed`; `detail` is computed only on a failure. */
  readonly that: (name: string, passed: boolean, detail: () => string) => void
  /** Passed when `actual` and `expected` are equal as canonical JSON. */
  readonly equal: (name: string, actual: unknown, expected: unknown) => void
  /** Every file in `expected` holds exactly those bytes (UTF-8 text), or is absent for `undefined`. */
  readonly files: (name: string, root: string, expected: Readonly<Record<string, string | undefined>>) => void
  readonly all: () => ReadonlyArray<ProbeAssertion>
}

/** A fresh, empty list of assertions. */
export const makeChecks = (): Checks => {
  const list: Array<ProbeAssertion> = []
  const that = (name: string, passed: boolean, detail: () => string) => {
    list.push(passed ? { name, passed } : { name, passed, detail: detail() })
  }
  return {
    that,
    equal: (name, actual, expected) => {
      const a = canonical(actual)
      const e = canonical(expected)
      that(name, a === e, () => `expected ${e}, got ${a}`)
    },
    files: (name, root, expected) => {
      const wrong = Object.entries(expected).flatMap(([rel, text]) => {
        const got = bytesAt(root, rel)
        const same = text === undefined ? got === undefined : got !== undefined && Buffer.from(text, "utf8").equals(got)
        return same ? [] : [`${rel}: expected ${text === undefined ? "no file" : JSON.stringify(text)}, got ${got === undefined ? "no file" : JSON.stringify(got.toString("utf8"))}`]
      })
      that(name, wrong.length === 0, () => wrong.join("; "))
    },
    all: () => [...list]
  }
}

// -------------------------------------------------------------------------------------
// scenario context
// -------------------------------------------------------------------------------------

/**
 * What a scenario gets: `dir`, its own scratch folder (removed afterwards, on the target's
 * filesystem), the argv prefix that starts the CLI, and where it records its assertions.
 */
export interface ScenarioContext {
  readonly dir: string
  readonly forkjoin: ReadonlyArray<string>
  readonly checks: Checks
}

/**
 * A scenario: runs in its context and records assertions; failing means it could not run to
 * the end (the probe then reports it failed, naming the error).
 */
export type Scenario = (context: ScenarioContext) => Effect.Effect<void, unknown>

// -------------------------------------------------------------------------------------
// files
// -------------------------------------------------------------------------------------

/** Writes `files` (relative path → text) under `root`, creating folders. */
export const writeFiles = (root: string, files: Readonly<Record<string, string>>): Effect.Effect<void, ScenarioError> =>
  Effect.try({
    try: () => {
      for (const [rel, text] of Object.entries(files)) {
        const abs = path.join(root, ...rel.split("/"))
        fs.mkdirSync(path.dirname(abs), { recursive: true })
        fs.writeFileSync(abs, text)
      }
    },
    catch: failure("Writing the scenario's files")
  })

/** The bytes of `rel` under `root`, or `undefined` when there is no regular file there. */
export const bytesAt = (root: string, rel: string): Buffer | undefined => {
  const abs = path.join(root, ...rel.split("/"))
  const stat = fs.lstatSync(abs, { throwIfNoEntry: false })
  return stat?.isFile() === true ? fs.readFileSync(abs) : undefined
}

/**
 * Every folder (`dir/`) and file (its text) under `root`, sorted, without forkjoin's own state
 * folder `.forkjoin/` at the top: the user-visible workspace, for "exactly this state" checks.
 */
export const workspaceTree = (root: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (dir: string, prefix: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const rel = prefix === "" ? name : `${prefix}/${name}`
      if (rel === ".forkjoin") continue
      const abs = path.join(dir, name)
      const stat = fs.lstatSync(abs)
      if (stat.isDirectory()) {
        out[`${rel}/`] = ""
        walk(abs, rel)
      } else if (stat.isSymbolicLink()) out[`${rel}@`] = fs.readlinkSync(abs)
      else out[rel] = stat.isFile() ? fs.readFileSync(abs, "utf8") : "(special file)"
    }
  }
  walk(root, "")
  return out
}

/** The tree `workspaceTree` reads for these files (their folders included). */
export const treeOf = (files: Readonly<Record<string, string>>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [rel, text] of Object.entries(files)) {
    const parts = rel.split("/")
    for (let i = 1; i < parts.length; i++) out[`${parts.slice(0, i).join("/")}/`] = ""
    out[rel] = text
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)))
}

/** Creates `dir` (and its parents) and returns it. */
export const makeDirectory = (dir: string): Effect.Effect<string, ScenarioError> =>
  Effect.try({ try: () => (fs.mkdirSync(dir, { recursive: true }), dir), catch: failure(`Creating the folder ${path.basename(dir)}`) })

/**
 * Creates a scratch workspace the CLI is started on: `dir` with its own state folder from the
 * start. The scratch lies below the user's workspace (in its `.forkjoin/probe/`), and the CLI
 * takes a folder without a state folder of its own for part of the workspace enclosing it: the
 * scenario would then run in the user's files.
 */
export const makeCliWorkspace = (dir: string): Effect.Effect<string, ScenarioError> =>
  makeDirectory(dir).pipe(
    Effect.andThen(Workspace.ensureStateFolder(dir).pipe(
      Effect.mapError((e) => new ScenarioError({ operation: `Creating the state folder of ${path.basename(dir)}`, detail: e.message, cause: e }))
    )),
    Effect.as(dir)
  )

// -------------------------------------------------------------------------------------
// plans
// -------------------------------------------------------------------------------------

/** `n` numbered lines `<prefix>1\n` … `<prefix>n\n`. */
export const numberedLines = (prefix: string, n: number): string => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}\n`).join("")

/** An apply_patch text from its body lines. */
export const patchOf = (...body: ReadonlyArray<string>): string => ["*** Begin Patch", ...body, "*** End Patch"].join("\n")

/** A mutating scripted child: one `apply_patch` of `body`, then `finish`. */
export const editTask = (id: string, scope: ReadonlyArray<string>, body: ReadonlyArray<string>) => ({
  id,
  mode: "transactional_write",
  writeScope: scope,
  actions: [{ apply_patch: { patch: patchOf(...body) } }, { finish: {} }]
})

/** A task that brings a changeset produced elsewhere (`file` relative to the plan's folder). */
export const changesetTask = (id: string, scope: ReadonlyArray<string>, file: string) => ({
  id,
  mode: "transactional_write",
  writeScope: scope,
  changesetFile: file
})

/** A plan (schemaVersion 1) of `tasks` with plan-level fields (`between`, `resolve`, ...). */
export const planOf = (tasks: ReadonlyArray<unknown>, extra: Readonly<Record<string, unknown>> = {}) => ({ schemaVersion: 1, tasks, ...extra })

const decodePlan = (plan: unknown): Effect.Effect<RunPlan.RunPlan, ScenarioError> => {
  const decoded = RunPlan.decode(plan)
  return Result.isSuccess(decoded)
    ? Effect.succeed(decoded.success)
    : Effect.fail(new ScenarioError({ operation: "Decoding the scenario's plan", detail: decoded.failure.message }))
}

/** The caller thread of every probe run. */
export const PROBE_THREAD = ThreadId.make("probe")

/**
 * The orchestrator's layer over the workspace `root` (its state folder checked and created
 * first, as the CLI does), with its default history database.
 */
export const inWorkspace = <A, E, R>(root: string, effect: Effect.Effect<A, E, R>) =>
  Effect.provide(effect, WorkspaceLayer.checked(root))

/** The probe's runs are in its own scratch workspaces: exempt from the autonomy level. */
const EXEMPT = { _tag: "Exempt", reason: "merge probe" } as const

/** Runs `plan` end to end (children, between-edits, join, resolutions) in the engine's workspace. */
export const runPlan = (plan: unknown, planDirectory: string) =>
  decodePlan(plan).pipe(
    Effect.flatMap((decoded) => OrchestratorRun.runPlan(decoded, { planDirectory, callerThreadId: PROBE_THREAD, admission: EXEMPT }))
  )

/**
 * Runs `task` export-only in the engine's workspace into `runDirectory` (nothing is written to
 * the workspace) and returns the child's folder (`changeset.json`, `blobs/sha256/<hex>`).
 */
export const exportChild = (task: unknown, runDirectory: string) =>
  Effect.gen(function*() {
    const plan = yield* decodePlan(planOf([task]))
    const ran = yield* Children.runExportOnly(plan, { runId: "probe-export", runDirectory })
    const child = ran.results[0]
    if (child?.changeset === undefined) {
      return yield* new ScenarioError({ operation: "Exporting a child's changeset", detail: `the child ended ${child?.status ?? "without a result"}` })
    }
    return child.artifacts
  })

/** Reads, edits and writes back a JSON file (the changeset as the untrusted JSON it is). */
export const editJson = (file: string, edit: (value: unknown) => void): Effect.Effect<void, ScenarioError> =>
  Effect.try({
    try: () => {
      const value: unknown = JSON.parse(fs.readFileSync(file, "utf8"))
      edit(value)
      fs.writeFileSync(file, JSON.stringify(value))
    },
    catch: failure(`Editing ${path.basename(file)}`)
  })

type Container = Record<string | number, unknown>

const isContainer = (u: unknown): u is Container => typeof u === "object" && u !== null

/** The object at `at` below `value` (throws when the path is not there: the scenario is broken). */
const containerAt = (value: unknown, at: ReadonlyArray<string | number>): Container => {
  let here: unknown = value
  for (const key of at) here = isContainer(here) ? here[key] : undefined
  if (!isContainer(here)) throw new Error(`no object at ${at.join(".")} of the changeset`)
  return here
}

/** Sets `value[...at, key] = to` in parsed JSON. */
export const setAt = (value: unknown, at: ReadonlyArray<string | number>, key: string | number, to: unknown): void => {
  containerAt(value, at)[key] = to
}

/** Removes `value[...at, key]` from parsed JSON. */
export const removeAt = (value: unknown, at: ReadonlyArray<string | number>, key: string | number): void => {
  delete containerAt(value, at)[key]
}

/** Every record of the engine's workspace, in commit order. */
export const records: Effect.Effect<ReadonlyArray<PatchHistoryRecord>, unknown, Engine | HistoryRecords> = Effect.gen(function*() {
  const engine = yield* Engine
  const history = yield* HistoryRecords
  return yield* history.recordsAfter(engine.environmentId, 0, 100_000)
})

/** The transaction ids of `rs`, in commit order. */
export const transactionsOf = (rs: ReadonlyArray<PatchHistoryRecord>): ReadonlyArray<string> => rs.map((r) => r.transactionId)

/** The paths a record changed (both ends of a move), sorted. */
export const changedPaths = (r: PatchHistoryRecord): ReadonlyArray<string> =>
  r.changes.flatMap((c) => (c.moveFrom === undefined ? [c.path] : [c.moveFrom, c.path])).sort()

/** `subagent_merge:<run-id>/<task-id>`: the transaction that applies one child. */
export const childTransaction = (runId: string, taskId: string): string => `subagent_merge:${runId}/${taskId}`

// -------------------------------------------------------------------------------------
// the CLI in a child process
// -------------------------------------------------------------------------------------

/** One finished CLI process (`signal` set when it was killed, e.g. by an injected fault). */
export interface CliResult {
  readonly status: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * The environment of a CLI child: the probe's own, without any `FORKJOIN_*` setting of the
 * user, plus exactly the fault the scenario wants, sealed with the key in `keyFile`.
 * `FORKJOIN_AUTONOMY=bold`: the scratch workspace is exempt from the user's autonomy level
 * (SPEC §7) and the gate cannot ask for the evidence this probe is producing.
 */
const cliEnvironment = (fault: { readonly fault: string; readonly keyFile: string } | undefined): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("FORKJOIN_"))),
  NO_COLOR: "1",
  FORCE_COLOR: "0",
  FORKJOIN_AUTONOMY: "bold",
  ...(fault === undefined ? {} : FaultChannel.seal(fault.fault, fault.keyFile))
})

/** A fresh fault key of this probe in a private temp folder, removed with it when the child is done. */
const withFaultKey = <A, E>(fault: string | undefined, use: (sealed: { readonly fault: string; readonly keyFile: string } | undefined) => Effect.Effect<A, E>) =>
  fault === undefined
    ? use(undefined)
    : Effect.acquireUseRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-probe-fault-"))),
      (dir) => use({ fault, keyFile: FaultChannel.makeKey(dir) }),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )

// Far above any probe step (about a second): only a hung process ever reaches it.
const CLI_TIMEOUT_MS = 120_000

/**
 * Runs `forkjoin ARGS` with `stdin` and exactly the fault `fault` (none when undefined); a
 * process still running after two minutes is killed and the step fails.
 */
export const cli = (
  forkjoin: ReadonlyArray<string>,
  args: ReadonlyArray<string>,
  options: { readonly fault?: string; readonly stdin?: string } = {}
): Effect.Effect<CliResult, ScenarioError> =>
  withFaultKey(options.fault, (fault) => Effect.callback<CliResult, ScenarioError>((resume) => {
    const [command, ...prefix] = forkjoin
    if (command === undefined) {
      resume(Effect.fail(new ScenarioError({ operation: "Starting the CLI", detail: "no command was given to start forkjoin" })))
      return
    }
    const child = spawn(command, [...prefix, ...args], { env: cliEnvironment(fault), stdio: ["pipe", "pipe", "pipe"] })
    const out: Array<Buffer> = []
    const err: Array<Buffer> = []
    child.stdout.on("data", (b: Buffer) => out.push(b))
    child.stderr.on("data", (b: Buffer) => err.push(b))
    child.on("error", (e) => resume(Effect.fail(failure(`Starting forkjoin ${args[0] ?? ""}`)(e))))
    child.on("close", (status, signal) =>
      resume(Effect.succeed({ status, signal, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") })))
    // A child killed before reading its stdin closes the pipe: that is the fault firing, not an error.
    child.stdin.on("error", () => {})
    child.stdin.end(options.stdin ?? "")
    return Effect.sync(() => killChild(child))
  })).pipe(Effect.timeoutOrElse({
    duration: CLI_TIMEOUT_MS,
    orElse: () => Effect.fail(new ScenarioError({ operation: `Running forkjoin ${args[0] ?? ""}`, detail: `it did not end within ${CLI_TIMEOUT_MS / 1000} s and was killed` }))
  }))

/** The last non-empty line of `stdout`, parsed as JSON. */
export const lastJsonLine = (operation: string, r: CliResult): Effect.Effect<unknown, ScenarioError> =>
  Effect.try({
    try: () => JSON.parse(r.stdout.trim().split("\n").pop() ?? ""),
    catch: () =>
      new ScenarioError({
        operation,
        detail: `forkjoin printed no JSON line (exit ${r.status}, signal ${r.signal}): ${r.stderr.trim().split("\n").slice(-3).join(" | ")}`
      })
  })
