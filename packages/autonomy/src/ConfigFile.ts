/**
 * The `forkjoin.config.json` file format as users meet it: the file's schema with, on each key,
 * the hint its error message gives and the examples that hint shows (annotations on the schema,
 * read back when a problem is reported, so a message cannot drift from the format), and reading
 * a file's text into the checked settings, every problem with its JSON path.
 *
 * Does not own the format's fields (`@forkjoin/schema/Autonomy`) nor what a setting resolves
 * to (`Config.ts`).
 *
 * @since 0.1.0
 */
import { AutonomyLevel, ForkjoinConfigFile } from "@forkjoin/schema/Autonomy"
import { describeSyntaxError, parseJson } from "@forkjoin/schema/JsonText"
import { problemsOf } from "@forkjoin/schema/SchemaProblems"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as Age from "./Age.ts"
import { AutonomyError } from "./AutonomyError.ts"
import { DEFAULT_EVIDENCE, parseBoolean } from "./ConfigSettings.ts"
import { jsonPath } from "./internal/jsonText.ts"
import { didYouMean, kindOf, orList, shown } from "./internal/wording.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * The configuration file's name, read from the workspace root.
 *
 * @category models
 * @since 0.1.0
 */
export const CONFIG_FILE = "forkjoin.config.json"

/**
 * The annotation holding what a key's value must be, said after the value found (`number 3 must
 * be ...`); `{examples}` in it stands for the key's `examples` annotation, listed.
 *
 * @category models
 * @since 0.1.0
 */
export const HINT = "forkjoin/configHint"

const hinted = <S extends Schema.Top>(field: S, hint: string, examples?: ReadonlyArray<S["Type"]>): S["Rebuild"] =>
  field.pipe(Schema.annotateKey({ [HINT]: hint, ...(examples === undefined ? {} : { examples }) }))

const gateFields = ForkjoinConfigFile.fields.gate.schema

/**
 * `ForkjoinConfigFile` with the hints and examples of its messages (the same values decode).
 *
 * @category models
 * @since 0.1.0
 */
export const ConfigFileFormat = ForkjoinConfigFile.mapFields((f) => ({
  ...f,
  $schema: hinted(f.$schema, "must be a string (the URL or path of the file's JSON schema)"),
  schemaVersion: hinted(f.schemaVersion, "is not a schema version this build reads; use {examples} (or leave it out)", [1]),
  autonomy: hinted(f.autonomy, "is not an autonomy level; use {examples}", AutonomyLevel.literals),
  mutatingSubagents: hinted(
    f.mutatingSubagents,
    "is not a boolean; use {examples} (or one of the strings \"1\", \"yes\", \"on\", \"0\", \"no\", \"off\")",
    [true, false]
  ),
  gate: hinted(
    Schema.optionalKey(gateFields.mapFields((g) => ({
      ...g,
      evidence: hinted(g.evidence, "must be the evidence file's path, relative to the workspace root"),
      maxEvidenceAge: hinted(g.maxEvidenceAge, "must be an age like {examples}", ["30m", "24h", "7d"]),
      trustedKeys: hinted(
        Schema.optionalKey(Schema.Array(Schema.String.annotate({ [HINT]: "must be the path of a public key file, relative to the workspace root" }))),
        "must be a list of public key files, like {examples}",
        [["keys/ci.pem.pub"]]
      )
    }))),
    "must be an object like {examples}",
    [{ maxEvidenceAge: "7d" }]
  ),
  cluster: hinted(f.cluster, "must be an object like {examples}", [{ url: "sqlite:.forkjoin/cluster.db" }, { url: "postgres://forkjoin@db.internal/forkjoin", secretFile: "cluster.secret" }])
})).annotate({ [HINT]: "must hold one JSON object like {examples}", examples: [{ autonomy: "safe" }] })

// -------------------------------------------------------------------------------------
// hints
// -------------------------------------------------------------------------------------

// The format's node at a key path (array items by index), or undefined past its known keys.
const nodeAt = (keys: ReadonlyArray<PropertyKey>): SchemaAST.AST | undefined =>
  keys.reduce<SchemaAST.AST | undefined>(
    (ast, key) =>
      ast === undefined
        ? undefined
        : SchemaAST.isObjects(ast)
        ? ast.propertySignatures.find((p) => p.name === key)?.type
        : SchemaAST.isArrays(ast) && typeof key === "number"
        ? ast.elements[key] ?? ast.rest[0]
        : undefined,
    ConfigFileFormat.ast
  )

/**
 * The keys the format allows in the object at `parent`, in the format's order; `undefined` when
 * `parent` is not an object of the format.
 *
 * @category constructors
 * @since 0.1.0
 */
export const knownKeysAt = (parent: ReadonlyArray<PropertyKey>): ReadonlyArray<string> | undefined => {
  const ast = nodeAt(parent)
  return ast !== undefined && SchemaAST.isObjects(ast) ? ast.propertySignatures.map((p) => String(p.name)) : undefined
}

/**
 * What the value at `keys` must be, from the format's annotations, with a "did you mean" when
 * `value` is a string near one of the examples; `undefined` for a key without a hint.
 *
 * @category constructors
 * @since 0.1.0
 */
export const hintAt = (keys: ReadonlyArray<PropertyKey>, value: unknown): string | undefined => {
  const ast = nodeAt(keys)
  if (ast === undefined) return undefined
  const annotations = { ...SchemaAST.resolve(ast), ...ast.context?.annotations }
  const hint = annotations[HINT]
  if (typeof hint !== "string") return undefined
  const examples: ReadonlyArray<unknown> = Array.isArray(annotations["examples"]) ? annotations["examples"] : []
  const words = examples.filter((e): e is string => typeof e === "string")
  const suggestion = typeof value === "string" && words.length > 0 && words.length === examples.length ? didYouMean(value, words) : ""
  return `${hint.replace("{examples}", orList(examples.map(shown)))}${suggestion}`
}

// -------------------------------------------------------------------------------------
// reading
// -------------------------------------------------------------------------------------

const valueAt = (root: unknown, keys: ReadonlyArray<PropertyKey>): unknown =>
  keys.reduce<unknown>((v, k) => (v !== null && typeof v === "object" ? (v as Record<PropertyKey, unknown>)[k] : undefined), root)

// The problems of a parsed config object; empty when it is valid.
const fileProblems = (raw: Record<string, unknown>): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const decoded = Schema.decodeUnknownResult(ConfigFileFormat, { onExcessProperty: "error", errors: "all" })(raw)
  if (Result.isFailure(decoded)) {
    for (const problem of problemsOf(decoded.failure.issue)) {
      const at = `$${jsonPath(problem.path)}`
      const key = problem.path.at(-1)
      const known = knownKeysAt(problem.path.slice(0, -1))
      if (known !== undefined && typeof key === "string" && !known.includes(key)) {
        problems.push(`${at}: unknown key ${JSON.stringify(key)}${didYouMean(key, known)}; the keys allowed here are ${known.join(", ")}`)
        continue
      }
      const value = valueAt(raw, problem.path)
      const hint = problem.path.length === 0 ? undefined : hintAt(problem.path, value)
      problems.push(hint === undefined ? `${at}: ${problem.message}` : `${at}: ${kindOf(value)} ${hint}`)
    }
  }
  const gate = raw["gate"]
  if (gate !== null && typeof gate === "object" && !Array.isArray(gate)) {
    const g = gate as Record<string, unknown>
    const age = g["maxEvidenceAge"]
    if (typeof age === "string") {
      const parsed = Age.parse(age)
      if (Result.isFailure(parsed)) problems.push(`$.gate.maxEvidenceAge: ${parsed.failure}`)
    }
    if (g["evidence"] === "") problems.push(`$.gate.evidence: an empty path; ${hintAt(["gate", "evidence"], "")}, or leave it out for ${DEFAULT_EVIDENCE}`)
    const keys = g["trustedKeys"]
    if (Array.isArray(keys)) {
      keys.forEach((k, i) => {
        if (k === "") problems.push(`$.gate.trustedKeys[${i}]: an empty path; ${hintAt(["gate", "trustedKeys", i], k)}`)
      })
    }
  }
  return problems
}

const configError = (file: string, problems: ReadonlyArray<string>): AutonomyError =>
  new AutonomyError({
    code: "config_invalid",
    paths: [file],
    message: problems.length === 1
      ? `${file} is not valid: ${problems[0]}. Fix the file, or remove it to use the defaults.`
      : `${file} is not valid (${problems.length} problems):\n${problems.map((p) => `  - ${p}`).join("\n")}\nFix the file, or remove it to use the defaults.`
  })

/**
 * Parses and checks a config file's text: not JSON (with the line and column), not an object, an
 * unknown key or a bad value is `config_invalid` naming every problem. A `mutatingSubagents`
 * string is read in any case, as the environment's is.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readConfigFile = (file: { readonly path: string; readonly text: string }): Result.Result<ForkjoinConfigFile, AutonomyError> => {
  const parsed = parseJson(file.text)
  if (!parsed.ok) {
    return Result.fail(new AutonomyError({
      code: "config_invalid",
      paths: [file.path],
      message: `${file.path} is not JSON: ${describeSyntaxError(parsed.error)}. ` +
        `Fix the file (it ${hintAt([], undefined)}), or remove it to use the defaults.`
    }))
  }
  const raw = parsed.value
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return Result.fail(new AutonomyError({
      code: "config_invalid",
      paths: [file.path],
      message: `${file.path} ${hintAt([], raw)}, found ${kindOf(raw)}. Fix the file, or remove it to use the defaults.`
    }))
  }
  const record: Record<string, unknown> = { ...raw }
  const flag = record["mutatingSubagents"]
  if (typeof flag === "string" && parseBoolean(flag) !== undefined) record["mutatingSubagents"] = flag.trim().toLowerCase()
  const problems = fileProblems(record)
  if (problems.length > 0) return Result.fail(configError(file.path, problems))
  const decoded = Schema.decodeUnknownResult(ConfigFileFormat)(record)
  return Result.isSuccess(decoded) ? Result.succeed(decoded.success) : Result.fail(configError(file.path, problemsOf(decoded.failure.issue).map((p) => p.message)))
}
