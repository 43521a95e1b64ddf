/**
 * The `forkjoin gate`, `forkjoin keygen` and `forkjoin config explain` commands: flags and
 * help, wired to `Gate.ts`.
 *
 * @since 0.1.0
 */
import { Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Colour from "./internal/colour.ts"
import { command } from "./internal/command.ts"
import { jsonFlag, jsonLineFlag, optionalText, workspaceFlagOrCurrent } from "./internal/flags.ts"
import { CommandExit, writeStdout } from "./internal/output.ts"

const workspace = workspaceFlagOrCurrent("The workspace; its forkjoin.config.json is read")

/**
 * `forkjoin gate [--workspace DIR] [--evidence FILE] [--trust PUBKEY]... [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const gate = command(
  "gate",
  {
    workspace,
    evidence: optionalText("evidence", "FILE", "The evidence to check, a regular file (default <workspace>/.forkjoin/evidence/merge-probe.json, or the config's gate.evidence)"),
    trust: Flag.String("trust").pipe(
      Flag.withMetavar("PUBKEY"),
      Flag.withDescription("Accept only evidence signed by this public key (repeatable; from 'forkjoin keygen')"),
      Flag.atLeast(0)
    ),
    json: jsonFlag(
      "Print the decision as one JSON line: {\"status\",\"level\",\"mutatingSubagents\",\"missing\",\"reasons\",\"evidence\",\"warnings\",\"message\",\"decidedAt\"}"
    )
  },
  function*(input) {
    const Gate = yield* Effect.promise(() => import("./Gate.ts"))
    const decision = yield* Gate.gate({ workspace: input.workspace, evidence: Option.getOrUndefined(input.evidence), trust: input.trust })
    yield* writeStdout(input.json ? `${JSON.stringify(decision)}\n` : Gate.renderText(decision, Colour.forStdout()))
    const code = Gate.exitCodeOf(decision)
    if (code !== 0) return yield* new CommandExit({ exitCode: code })
  }
).pipe(
  Command.withDescription(
    "Decide whether mutating children may run in the workspace (the same check 'forkjoin run' makes before " +
      "starting any). At autonomy safe the merge probe's evidence must be present and intact, every required " +
      "scenario passed, made by this build, fresh (7 days by default), on the same kind of filesystem, and — with " +
      "--trust — signed by a trusted key. Every unmet requirement is listed (evidence_missing, evidence_invalid, " +
      "scenario_failed, fingerprint_mismatch, evidence_stale, filesystem_mismatch, signature_missing, " +
      "signature_invalid, untrusted_signer). At off or supervised the answer is not_applicable (mutating children " +
      "are not allowed; the message says how to promote); at bold it is skipped. Exit 0 passed or skipped, 1 " +
      "blocked or not_applicable, 2 usage or configuration error."
  ),
  Command.withShortDescription("Check the probe evidence that lets mutating children run")
)

/**
 * `forkjoin keygen --out KEYFILE [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const keygen = command(
  "keygen",
  {
    out: Flag.String("out").pipe(Flag.withMetavar("KEYFILE"), Flag.withDescription("Private key file to write (the public key goes to KEYFILE.pub)")),
    json: jsonLineFlag("{\"ok\":true,\"privateFile\",\"publicFile\",\"keyId\"}")
  },
  function*(input) {
    const Gate = yield* Effect.promise(() => import("./Gate.ts"))
    const pair = yield* Gate.keygen(input.out)
    yield* writeStdout(input.json ? `${JSON.stringify({ ok: true, ...pair })}\n` : Gate.renderKeygen(pair))
  }
).pipe(
  Command.withDescription(
    "Write an Ed25519 key pair as PEM: KEYFILE (private, mode 0600; keep it where evidence is made, e.g. CI) and " +
      "KEYFILE.pub (public; give it to the machines that run agents). 'forkjoin probe --sign KEYFILE' signs evidence, " +
      "'forkjoin gate --trust KEYFILE.pub' accepts only evidence signed with it. Never overwrites a file. Exit 0, " +
      "1 when a file cannot be written, 2 when one already exists."
  ),
  Command.withShortDescription("Make a key pair for signed probe evidence")
)

const explain = command(
  "explain",
  {
    workspace,
    json: jsonLineFlag("{\"workspace\",\"file\",\"settings\":[{\"name\",\"value\",\"source\",\"env\",\"configKey\"}],\"mutatingChildren\",\"notes\"}")
  },
  function*(input) {
    const Gate = yield* Effect.promise(() => import("./Gate.ts"))
    const { render } = yield* Effect.promise(() => import("@forkjoin/autonomy/Config"))
    const explanation = yield* Gate.explain(input.workspace)
    yield* writeStdout(input.json ? `${JSON.stringify(explanation)}\n` : `${render(explanation).join("\n")}\n`)
  },
  { group: "config" }
).pipe(
  Command.withDescription(
    "Show every autonomy setting with its value and where it came from. Highest first: an environment variable " +
      "(FORKJOIN_AUTONOMY, FORKJOIN_MUTATING_SUBAGENTS, FORKJOIN_EVIDENCE, FORKJOIN_EVIDENCE_MAX_AGE), " +
      "forkjoin.config.json at the workspace root, the level's default, the built-in default (supervised). A " +
      "malformed value stops here and in every command that reads it, naming the variable or JSON path (exit 2)."
  ),
  Command.withShortDescription("Every autonomy setting and its source")
)

/**
 * `forkjoin config explain [--workspace DIR] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const config = Command.make("config").pipe(
  Command.withDescription("The autonomy configuration: levels off, supervised, safe, bold; see 'forkjoin config explain'."),
  Command.withShortDescription("Show the autonomy configuration"),
  Command.withSubcommands([explain])
)
