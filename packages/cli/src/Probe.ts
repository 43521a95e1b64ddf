/**
 * `forkjoin probe`: runs the deterministic merge probe (`@forkjoin/probes`) in temporary
 * workspaces under `<workspace>/.forkjoin/probe/`, on the workspace's filesystem, then writes
 * the evidence the promotion gate reads (optionally signed). The user's files are never
 * touched. What the scenarios check is the probe's; evidence, digest and signing are
 * `@forkjoin/autonomy`'s; this module only runs them in order and renders the result.
 *
 * @since 0.1.0
 */
import * as Config from "@forkjoin/autonomy/Config"
import * as Evidence from "@forkjoin/autonomy/Evidence"
import * as Filesystem from "@forkjoin/autonomy/Filesystem"
import * as Fingerprint from "@forkjoin/autonomy/Fingerprint"
import * as Keys from "@forkjoin/autonomy/Keys"
import * as Probe from "@forkjoin/probes/Probe"
import type { ProbeEvidence, ScenarioResult } from "@forkjoin/schema/Evidence"
import { utcTimestampFromMillis } from "@forkjoin/schema/UtcTimestamp"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import * as Colour from "./internal/colour.ts"
import { ensureStateFolder, resolveWorkspace } from "./internal/workspace.ts"

/**
 * One `probe` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface ProbeRequest {
  readonly workspace: string
  readonly out?: string | undefined
  readonly sign?: string | undefined
  /** The argv prefix that starts this CLI (the crash scenarios run it in child processes). */
  readonly forkjoin: ReadonlyArray<string>
  /** Told each scenario as it finishes (live progress on a terminal). */
  readonly onScenario?: ((result: ScenarioResult) => Effect.Effect<void>) | undefined
}

/**
 * What `probe` wrote: the evidence and where.
 *
 * @category models
 * @since 0.1.0
 */
export interface ProbeReport {
  readonly evidence: ProbeEvidence
  readonly file: string
}

/**
 * Runs every scenario, then writes the evidence (to `--out`, else where the configuration's gate
 * looks for it, by default `<workspace>/.forkjoin/evidence/merge-probe.json`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const probe = Effect.fn("Probe.probe")(function*(request: ProbeRequest) {
  const root = yield* resolveWorkspace(request.workspace)
  // Refuses a linked `.forkjoin` before anything is written under it.
  yield* ensureStateFolder(root)
  const config = yield* Config.load(root)
  // Read the key first: a bad key should not cost a whole probe run.
  const key = request.sign === undefined ? undefined : yield* Keys.readPrivate(request.sign)
  const started = Date.now()
  const scenarios = yield* Probe.run({
    workspace: root,
    forkjoin: request.forkjoin,
    ...(request.onScenario === undefined ? {} : { onScenario: request.onScenario })
  })
  const unsigned = Evidence.assemble({
    fingerprint: Fingerprint.current(),
    filesystem: Filesystem.factsOf(root),
    scenarios,
    createdAt: utcTimestampFromMillis(started),
    durationMs: Date.now() - started
  })
  const evidence = key === undefined ? unsigned : yield* Effect.fromResult(Evidence.sign(unsigned, key))
  const file = request.out === undefined ? config.evidence.value : path.resolve(request.out)
  yield* Evidence.write(file, evidence)
  return { evidence, file } satisfies ProbeReport
})

const ms = (n: number): string => `${Math.round(n).toLocaleString("en-US")} ms`

/**
 * One scenario as a table row (and, when it failed, its failed assertions below it).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderScenario = (s: ScenarioResult, width: number, palette: Colour.Palette = Colour.plain): ReadonlyArray<string> => {
  const mark = s.status === "passed" ? palette.green("passed") : palette.red("FAILED")
  const lines = [`  ${s.id.padEnd(width)}  ${mark}  ${ms(s.durationMs).padStart(9)}`]
  for (const a of s.assertions) {
    if (!a.passed) lines.push(`      failed: ${a.name}${a.detail === undefined ? "" : ` (${a.detail})`}`)
  }
  return lines
}

const factsLine = (e: ProbeEvidence): string => {
  const f = e.filesystem
  const yes = (b: boolean, what: string) => (b ? what : `no ${what}`)
  return `${f.type} (${[yes(f.atomicRename, "atomic rename"), yes(f.fsyncHonoured, "fsync"), f.caseSensitive ? "case-sensitive" : "case-insensitive", yes(f.symlinks, "symlinks")].join(", ")})`
}

/**
 * The report for a person: a table of scenarios, the failed assertions, the filesystem, the
 * digest, where the evidence went and what to do next.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (report: ProbeReport, palette: Colour.Palette = Colour.plain): string => {
  const { evidence } = report
  const width = Math.max(...evidence.scenarios.map((s) => s.id.length))
  const passed = evidence.scenarios.filter((s) => s.status === "passed").length
  const lines = [
    "merge probe (scripted children in temporary workspaces under .forkjoin/probe/; your files were not touched)",
    ...evidence.scenarios.flatMap((s) => renderScenario(s, width, palette)),
    "",
    `${evidence.status === "passed" ? palette.green("passed") : palette.red("FAILED")}: ${passed}/${evidence.scenarios.length} scenarios in ${ms(evidence.durationMs)}`,
    `filesystem: ${factsLine(evidence)}`,
    `build:      forkjoin ${evidence.fingerprint.version}, sources ${evidence.fingerprint.sourceDigest.slice(0, 19)}…`,
    `digest:     ${evidence.digest}`,
    `evidence:   ${report.file}${evidence.signature === undefined ? " (unsigned)" : ` (signed by ${evidence.signature.keyId})`}`,
    evidence.status === "passed"
      ? `next: 'forkjoin gate' checks it (mutating children need autonomy safe: FORKJOIN_AUTONOMY=safe or "autonomy": "safe" in forkjoin.config.json).`
      : "next: the failed scenarios above show where the merge machinery misbehaves on this machine; the gate will refuse this evidence."
  ]
  return `${lines.join("\n")}\n`
}

/**
 * The `--json` line: `{"ok", "file", "evidence"}` (`ok` false when a scenario failed).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (report: ProbeReport): string =>
  `${JSON.stringify({ ok: report.evidence.status === "passed", file: report.file, evidence: report.evidence })}\n`
