/** Shared fixtures for the autonomy tests: temp folders and evidence built from real facts. */
import type { FilesystemFacts, ProbeEvidence, ScenarioResult } from "@forkjoin/schema/Evidence"
import { utcTimestampFromMillis } from "@forkjoin/schema/UtcTimestamp"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach } from "vitest"
import * as Evidence from "../src/Evidence.ts"
import * as Filesystem from "../src/Filesystem.ts"
import * as Fingerprint from "../src/Fingerprint.ts"
import { scenarios } from "../src/Scenarios.ts"

const made: Array<string> = []

afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

/** A fresh folder under `base` (default the OS temp folder), removed after the test. */
export const tempDir = (base: string = os.tmpdir()): string => {
  const dir = fs.mkdtempSync(path.join(base, "fj-autonomy-"))
  made.push(dir)
  return dir
}

/** Every catalogue scenario, passed, with one assertion each. */
export const passingScenarios = (durationMs = 12): Array<ScenarioResult> =>
  scenarios.map((s) => ({ id: s.id, title: s.title, status: "passed", assertions: [{ name: "holds", passed: true }], durationMs }))

/** Fixed "now" for pure tests: 2026-03-01T12:00:00.000Z. */
export const NOW = Date.parse("2026-03-01T12:00:00.000Z")

/** Evidence from the real fingerprint and the real facts of `dir`, created `ageMs` before `now`. */
export const evidenceFor = (
  dir: string,
  options: {
    readonly now?: number
    readonly ageMs?: number
    readonly scenarios?: ReadonlyArray<ScenarioResult>
    readonly filesystem?: FilesystemFacts
  } = {}
): ProbeEvidence =>
  Evidence.assemble({
    fingerprint: Fingerprint.current(),
    filesystem: options.filesystem ?? Filesystem.factsOf(dir),
    scenarios: options.scenarios ?? passingScenarios(),
    createdAt: utcTimestampFromMillis((options.now ?? NOW) - (options.ageMs ?? 60_000)),
    durationMs: 1234
  })

/** Writes `value` as JSON to `file` (creating folders). */
export const writeJson = (file: string, value: unknown): void => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`)
}
