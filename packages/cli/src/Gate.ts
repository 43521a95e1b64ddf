/**
 * `forkjoin gate`, `forkjoin keygen` and `forkjoin config explain`: the promotion gate's
 * decision for a workspace, an Ed25519 key pair for signed evidence, and every autonomy setting
 * with its source. The decisions and the settings are `@forkjoin/autonomy`'s; this module
 * renders them. Kept free of the engine and the database: the gate runs before every mutating
 * run and must start fast.
 *
 * @since 0.1.0
 */
import * as Config from "@forkjoin/autonomy/Config"
import * as Gate from "@forkjoin/autonomy/Gate"
import * as Keys from "@forkjoin/autonomy/Keys"
import type { GateDecision } from "@forkjoin/schema/Autonomy"
import * as Effect from "effect/Effect"
import * as Colour from "./internal/colour.ts"
import { resolveWorkspace } from "./internal/workspace.ts"

/**
 * One `gate` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface GateRequest {
  readonly workspace: string
  readonly evidence?: string | undefined
  readonly trust: ReadonlyArray<string>
}

/**
 * Decides the gate for the workspace under its configuration; `--evidence` and `--trust` win
 * over the configuration's settings.
 *
 * @category constructors
 * @since 0.1.0
 */
export const gate = Effect.fn("Gate.gate")(function*(request: GateRequest) {
  const root = yield* resolveWorkspace(request.workspace)
  return yield* Gate.evaluate({
    workspace: root,
    evidencePath: request.evidence,
    trust: request.trust.length === 0 ? undefined : request.trust
  })
})

/**
 * Exit 0 for `passed` and `skipped` (mutating children may run), 1 otherwise.
 *
 * @category combinators
 * @since 0.1.0
 */
export const exitCodeOf = (decision: GateDecision): 0 | 1 => decision.status === "passed" || decision.status === "skipped" ? 0 : 1

/**
 * The decision for a person: the status and level, one line per missing requirement, the
 * evidence checked, warnings, and what to do.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (decision: GateDecision, palette: Colour.Palette = Colour.plain): string => {
  const status = decision.status === "passed"
    ? palette.green(decision.status)
    : decision.status === "blocked"
    ? palette.red(decision.status)
    : palette.yellow(decision.status)
  const lines = [`gate: ${status} (autonomy ${decision.level})`]
  for (const r of decision.reasons) lines.push(`  ${palette.red(r.requirement)}: ${r.message}`)
  if (decision.evidence !== null) {
    const e = decision.evidence
    lines.push(`evidence: ${e.path}${e.createdAt === undefined ? "" : `, made ${e.createdAt}`}${e.signer === undefined ? "" : `, signed by ${e.signer}`}`)
  }
  for (const w of decision.warnings) lines.push(`${palette.yellow("warning")}: ${w}`)
  // A blocked decision's message repeats its reasons, already listed one per line above.
  lines.push(decision.reasons.length === 0 ? decision.message : "Mutating children will not run until every requirement above is met.")
  return `${lines.join("\n")}\n`
}

/**
 * Writes a new key pair (`KEYFILE`, mode 0600, and `KEYFILE.pub`); never overwrites one.
 *
 * @category constructors
 * @since 0.1.0
 */
export const keygen = (out: string) => Keys.writePair(out)

/**
 * What `keygen` prints: where each half went, the key id, and how each is used.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderKeygen = (pair: Keys.WrittenPair): string =>
  [
    `private key: ${pair.privateFile} (keep it secret, e.g. in your CI's secrets; sign with 'forkjoin probe --sign ${pair.privateFile}')`,
    `public key:  ${pair.publicFile} (give it to the machines that run agents: 'forkjoin gate --trust ${pair.publicFile}', or "gate": {"trustedKeys": [...]} in forkjoin.config.json)`,
    `key id:      ${pair.keyId}`
  ].join("\n") + "\n"

/**
 * Every autonomy setting of the workspace with its value and source.
 *
 * @category constructors
 * @since 0.1.0
 */
export const explain = Effect.fn("Gate.explain")(function*(workspace: string) {
  const root = yield* resolveWorkspace(workspace)
  return Config.explain(yield* Config.load(root))
})
