import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Age from "../src/Age.ts"
import type { AutonomyError } from "../src/AutonomyError.ts"
import * as Config from "../src/Config.ts"
import { tempDir } from "./helpers.ts"

const WS = "/ws"
const FILE = path.join(WS, "forkjoin.config.json")

const resolveWith = (env: Config.Env, file?: unknown): Result.Result<Config.ResolvedConfig, AutonomyError> =>
  Config.resolve({
    workspace: WS,
    env,
    file: file === undefined ? undefined : { path: FILE, text: typeof file === "string" ? file : JSON.stringify(file) }
  })

const ok = (env: Config.Env, file?: unknown): Config.ResolvedConfig => {
  const r = resolveWith(env, file)
  if (Result.isFailure(r)) assert.fail(`expected a configuration, got ${r.failure.code}: ${r.failure.message}`)
  return r.success
}

const refused = (env: Config.Env, file?: unknown): AutonomyError => {
  const r = resolveWith(env, file)
  if (Result.isSuccess(r)) assert.fail(`expected a refusal, got ${JSON.stringify(r.success)}`)
  return r.failure
}

describe("Config.resolve precedence (env > file > level default > built-in)", () => {
  const table: ReadonlyArray<{
    readonly name: string
    readonly env: Config.Env
    readonly file?: unknown
    readonly level: string
    readonly levelSource: string
    readonly flag: boolean
    readonly flagSource: string
    readonly grant: Config.MutatingGrant
  }> = [
    { name: "nothing set", env: {}, level: "supervised", levelSource: "built-in default", flag: false, flagSource: "default for level supervised", grant: "refused" },
    { name: "file level safe", env: {}, file: { autonomy: "safe" }, level: "safe", levelSource: "forkjoin.config.json autonomy", flag: true, flagSource: "default for level safe", grant: "gated" },
    { name: "env level beats file level", env: { FORKJOIN_AUTONOMY: "bold" }, file: { autonomy: "off" }, level: "bold", levelSource: "env FORKJOIN_AUTONOMY", flag: true, flagSource: "default for level bold", grant: "ungated" },
    { name: "env level off", env: { FORKJOIN_AUTONOMY: "off" }, file: { autonomy: "safe" }, level: "off", levelSource: "env FORKJOIN_AUTONOMY", flag: false, flagSource: "default for level off", grant: "refused" },
    { name: "file flag beats level default", env: {}, file: { autonomy: "safe", mutatingSubagents: false }, level: "safe", levelSource: "forkjoin.config.json autonomy", flag: false, flagSource: "forkjoin.config.json mutatingSubagents", grant: "refused" },
    { name: "file flag grants at supervised", env: {}, file: { mutatingSubagents: "yes" }, level: "supervised", levelSource: "built-in default", flag: true, flagSource: "forkjoin.config.json mutatingSubagents", grant: "gated" },
    { name: "env flag beats file flag", env: { FORKJOIN_MUTATING_SUBAGENTS: "ON" }, file: { mutatingSubagents: false }, level: "supervised", levelSource: "built-in default", flag: true, flagSource: "env FORKJOIN_MUTATING_SUBAGENTS", grant: "gated" },
    { name: "env flag off at safe", env: { FORKJOIN_AUTONOMY: "safe", FORKJOIN_MUTATING_SUBAGENTS: "0" }, level: "safe", levelSource: "env FORKJOIN_AUTONOMY", flag: false, flagSource: "env FORKJOIN_MUTATING_SUBAGENTS", grant: "refused" },
    { name: "flag ignored at off", env: { FORKJOIN_AUTONOMY: "off", FORKJOIN_MUTATING_SUBAGENTS: "true" }, level: "off", levelSource: "env FORKJOIN_AUTONOMY", flag: true, flagSource: "env FORKJOIN_MUTATING_SUBAGENTS", grant: "refused" },
    { name: "empty env counts as unset", env: { FORKJOIN_AUTONOMY: "", FORKJOIN_MUTATING_SUBAGENTS: "" }, file: { autonomy: "safe" }, level: "safe", levelSource: "forkjoin.config.json autonomy", flag: true, flagSource: "default for level safe", grant: "gated" },
    { name: "env level in another case", env: { FORKJOIN_AUTONOMY: " Safe " }, level: "safe", levelSource: "env FORKJOIN_AUTONOMY", flag: true, flagSource: "default for level safe", grant: "gated" }
  ]
  for (const row of table) {
    it(row.name, () => {
      const c = ok(row.env, row.file)
      assert.strictEqual(c.autonomy.value, row.level)
      assert.strictEqual(c.autonomy.source, row.levelSource)
      assert.strictEqual(c.mutatingSubagents.value, row.flag)
      assert.strictEqual(c.mutatingSubagents.source, row.flagSource)
      assert.strictEqual(Config.grantOf(c), row.grant)
    })
  }

  it("gate settings: env > file > built-in, paths taken from the workspace root", () => {
    const builtIn = ok({})
    assert.strictEqual(builtIn.evidence.value, path.join(WS, ".forkjoin/evidence/merge-probe.json"))
    assert.strictEqual(builtIn.evidence.source, "built-in default")
    assert.deepStrictEqual(builtIn.maxEvidenceAge.value, { text: "7d", millis: 7 * 86_400_000 })
    assert.deepStrictEqual(builtIn.trustedKeys.value, [])

    const file = { gate: { evidence: "ci/evidence.json", maxEvidenceAge: "24h", trustedKeys: ["keys/ci.pub"] } }
    const fromFile = ok({}, file)
    assert.strictEqual(fromFile.evidence.value, path.join(WS, "ci/evidence.json"))
    assert.strictEqual(fromFile.evidence.source, "forkjoin.config.json gate.evidence")
    assert.deepStrictEqual(fromFile.maxEvidenceAge.value, { text: "24h", millis: 86_400_000 })
    assert.strictEqual(fromFile.maxEvidenceAge.source, "forkjoin.config.json gate.maxEvidenceAge")
    assert.deepStrictEqual(fromFile.trustedKeys.value, [path.join(WS, "keys/ci.pub")])

    const fromEnv = ok({ FORKJOIN_EVIDENCE: "/elsewhere/e.json", FORKJOIN_EVIDENCE_MAX_AGE: "30m" }, file)
    assert.strictEqual(fromEnv.evidence.value, "/elsewhere/e.json")
    assert.strictEqual(fromEnv.evidence.source, "env FORKJOIN_EVIDENCE")
    assert.deepStrictEqual(fromEnv.maxEvidenceAge.value, { text: "30m", millis: 1_800_000 })
    assert.strictEqual(fromEnv.maxEvidenceAge.source, "env FORKJOIN_EVIDENCE_MAX_AGE")
  })

  it("command-line flags win over the configuration", () => {
    const c = Config.withFlags(ok({ FORKJOIN_EVIDENCE: "/a.json" }, { gate: { trustedKeys: ["k.pub"] } }), {
      evidence: "/b.json",
      trustedKeys: ["/keys/other.pub"]
    })
    assert.strictEqual(c.evidence.value, "/b.json")
    assert.strictEqual(c.evidence.source, "--evidence")
    assert.deepStrictEqual(c.trustedKeys.value, ["/keys/other.pub"])
    assert.strictEqual(c.trustedKeys.source, "--trust")
  })
})

describe("Config.resolve refusals", () => {
  it("an unknown level name in the environment names the variable and the levels", () => {
    const e = refused({ FORKJOIN_AUTONOMY: "turbo" })
    assert.strictEqual(e.code, "env_invalid")
    assert.include(e.message, "FORKJOIN_AUTONOMY=\"turbo\" is not an autonomy level")
    assert.include(e.message, "off, supervised, safe or bold")
  })

  it("a misspelt level gets a suggestion", () => {
    assert.include(refused({ FORKJOIN_AUTONOMY: "supervized" }).message, "did you mean \"supervised\"?")
  })

  for (const bad of ["maybe", "2", "tru", "y", "enabled"]) {
    it(`a malformed boolean in the environment (${bad}) names the variable`, () => {
      const e = refused({ FORKJOIN_MUTATING_SUBAGENTS: bad })
      assert.strictEqual(e.code, "env_invalid")
      assert.include(e.message, `FORKJOIN_MUTATING_SUBAGENTS=${JSON.stringify(bad)} is not a boolean`)
      assert.include(e.message, "1, true, yes or on")
    })
  }

  it("every bad variable is reported at once", () => {
    const e = refused({ FORKJOIN_AUTONOMY: "max", FORKJOIN_MUTATING_SUBAGENTS: "sure", FORKJOIN_EVIDENCE_MAX_AGE: "7 days" })
    assert.strictEqual(e.code, "env_invalid")
    assert.include(e.message, "3 environment variables are not valid")
    assert.include(e.message, "FORKJOIN_AUTONOMY=")
    assert.include(e.message, "FORKJOIN_MUTATING_SUBAGENTS=")
    assert.include(e.message, "FORKJOIN_EVIDENCE_MAX_AGE: '7 days' is not an age")
  })

  it("a malformed boolean in the file names the file and the JSON path", () => {
    const e = refused({}, { mutatingSubagents: "maybe" })
    assert.strictEqual(e.code, "config_invalid")
    assert.deepStrictEqual(e.paths, [FILE])
    assert.include(e.message, FILE)
    assert.include(e.message, "$.mutatingSubagents: string \"maybe\" is not a boolean")
  })

  it("a number is not a boolean in the file either", () => {
    assert.include(refused({}, { mutatingSubagents: 1 }).message, "$.mutatingSubagents: number 1 is not a boolean")
  })

  it("boolean words in the file are read in any case", () => {
    assert.strictEqual(ok({}, { mutatingSubagents: "NO" }).mutatingSubagents.value, false)
    assert.strictEqual(ok({}, { mutatingSubagents: "On" }).mutatingSubagents.value, true)
  })

  it("an unknown level in the file", () => {
    const e = refused({}, { autonomy: "Safe" })
    assert.strictEqual(e.code, "config_invalid")
    assert.include(e.message, "$.autonomy: string \"Safe\" is not an autonomy level")
    assert.include(e.message, "did you mean \"safe\"?")
  })

  it("a file that is not JSON says where it broke", () => {
    const e = refused({}, "{\n  \"autonomy\": \"safe\"\n  \"mutatingSubagents\": true\n}\n")
    assert.strictEqual(e.code, "config_invalid")
    assert.include(e.message, `${FILE} is not JSON: line 3, column 3: expected ',' or '}', found '"'`)
  })

  it("a truncated file and trailing commas are located too", () => {
    assert.include(refused({}, "{\"autonomy\": \"sa").message, "line 1, column 17: the text ends inside a string")
    assert.include(refused({}, "{\"autonomy\": \"safe\",}").message, "a trailing comma before '}' is not allowed in JSON")
    assert.include(refused({}, "").message, "the file is empty")
    assert.include(refused({}, "// settings\n{}").message, "comments are not allowed in JSON")
  })

  for (const [text, found] of [["[]", "an array"], ["\"safe\"", "string \"safe\""], ["null", "null"], ["7", "number 7"]] as const) {
    it(`a file holding ${found} is not an object`, () => {
      const e = refused({}, text)
      assert.strictEqual(e.code, "config_invalid")
      assert.include(e.message, `must hold one JSON object like {"autonomy": "safe"}, found ${found}`)
    })
  }

  it("an unknown key is refused with the keys allowed there and a suggestion", () => {
    const e = refused({}, { autonmy: "safe" })
    assert.strictEqual(e.code, "config_invalid")
    assert.include(e.message, "$.autonmy: unknown key \"autonmy\" (did you mean \"autonomy\"?)")
    assert.include(e.message, "the keys allowed here are $schema, schemaVersion, autonomy, mutatingSubagents, gate")
  })

  it("an unknown key inside gate, and every problem of the file at once", () => {
    const e = refused({}, { autonomy: "fast", gate: { maxAge: "7d", maxEvidenceAge: "a week", trustedKeys: ["", 3] } })
    assert.include(e.message, "(5 problems)")
    assert.include(e.message, "$.autonomy: string \"fast\" is not an autonomy level")
    assert.include(e.message, "$.gate.maxAge: unknown key \"maxAge\"")
    assert.include(e.message, "the keys allowed here are evidence, maxEvidenceAge, trustedKeys")
    assert.include(e.message, "$.gate.maxEvidenceAge: 'a week' is not an age like 30m, 24h or 7d")
    assert.include(e.message, "$.gate.trustedKeys[1]: number 3 must be the path of a public key file")
    assert.include(e.message, "$.gate.trustedKeys[0]: an empty path")
  })

  it("a bad file is refused even when the environment overrides its settings", () => {
    assert.strictEqual(refused({ FORKJOIN_AUTONOMY: "safe" }, { autonomy: "turbo" }).code, "config_invalid")
  })

  it("schemaVersion other than 1 is refused", () => {
    assert.include(refused({}, { schemaVersion: 2 }).message, "$.schemaVersion: number 2 is not a schema version this build reads")
    assert.strictEqual(ok({}, { schemaVersion: 1, $schema: "./schema.json" }).autonomy.value, "supervised")
  })

  it("a UTF-8 BOM before the object is fine", () => {
    assert.strictEqual(ok({}, "\uFEFF{\"autonomy\": \"bold\"}").autonomy.value, "bold")
  })
})

describe("Config.lowerTo", () => {
  it("a plan lowers the level, and a flag from the level default follows it", () => {
    const c = ok({ FORKJOIN_AUTONOMY: "safe" })
    const lowered = Config.lowerTo(c, "supervised")
    assert.isFalse(lowered.capped)
    assert.strictEqual(lowered.config.autonomy.value, "supervised")
    assert.strictEqual(lowered.config.autonomy.origin, "plan")
    assert.strictEqual(lowered.config.mutatingSubagents.value, false)
    assert.strictEqual(Config.grantOf(lowered.config), "refused")
  })

  it("an explicit flag stays when a plan lowers the level (except that off ignores it)", () => {
    const c = ok({ FORKJOIN_AUTONOMY: "bold", FORKJOIN_MUTATING_SUBAGENTS: "1" })
    assert.strictEqual(Config.grantOf(Config.lowerTo(c, "supervised").config), "gated")
    assert.strictEqual(Config.grantOf(Config.lowerTo(c, "safe").config), "gated")
    assert.strictEqual(Config.grantOf(Config.lowerTo(c, "off").config), "refused")
  })

  it("a plan cannot raise the level: capped, with a message", () => {
    const c = ok({}, { autonomy: "safe" })
    const lowered = Config.lowerTo(c, "bold")
    assert.isTrue(lowered.capped)
    assert.strictEqual(lowered.config.autonomy.value, "safe")
    assert.strictEqual(lowered.allowed, "safe")
    assert.strictEqual(lowered.requested, "bold")
    assert.include(lowered.message ?? "", "The plan asks for autonomy bold, but the configuration allows safe (forkjoin.config.json autonomy)")
    assert.include(lowered.message ?? "", "A plan can only lower the level")
  })

  it("no plan level, or the same level, changes nothing", () => {
    const c = ok({ FORKJOIN_AUTONOMY: "safe" })
    assert.strictEqual(Config.lowerTo(c, undefined).config, c)
    assert.strictEqual(Config.lowerTo(c, "safe").config, c)
    assert.isFalse(Config.lowerTo(c, "safe").capped)
  })
})

describe("Config.explain and render", () => {
  it("every setting with its value and source, JSON-ready", () => {
    const x = Config.explain(ok({ FORKJOIN_AUTONOMY: "safe" }, { gate: { maxEvidenceAge: "24h" } }))
    assert.deepStrictEqual(x.settings.map((s) => [s.name, s.value, s.source]), [
      ["autonomy", "safe", "env FORKJOIN_AUTONOMY"],
      ["mutatingSubagents", true, "default for level safe"],
      ["gate.evidence", path.join(WS, ".forkjoin/evidence/merge-probe.json"), "built-in default"],
      ["gate.maxEvidenceAge", "24h", "forkjoin.config.json gate.maxEvidenceAge"],
      ["gate.trustedKeys", [], "built-in default"]
    ])
    assert.strictEqual(x.mutatingChildren, "gated")
    assert.deepStrictEqual(JSON.parse(JSON.stringify(x)), x)
  })

  it("at off the flag is ignored, and the notes say so; supervised says how to promote", () => {
    const off = Config.explain(ok({ FORKJOIN_AUTONOMY: "off", FORKJOIN_MUTATING_SUBAGENTS: "yes" }))
    assert.strictEqual(off.mutatingChildren, "refused")
    assert.isTrue(off.notes.some((n) => n.includes("the level is off: the flag is ignored")))
    const supervised = Config.explain(ok({}))
    assert.isTrue(supervised.notes.some((n) => n.includes("set FORKJOIN_AUTONOMY=safe or \"autonomy\": \"safe\" in forkjoin.config.json, run `forkjoin probe`, then `forkjoin gate`")))
    assert.isTrue(supervised.notes.some((n) => n.includes("No forkjoin.config.json in the workspace")))
  })

  it("an empty variable is noted", () => {
    assert.isTrue(Config.explain(ok({ FORKJOIN_EVIDENCE: "" })).notes.includes("FORKJOIN_EVIDENCE is set but empty: ignored."))
  })

  it("renders aligned lines with each source", () => {
    const lines = Config.render(Config.explain(ok({ FORKJOIN_AUTONOMY: "bold" })))
    assert.strictEqual(lines[0], `config file: ${FILE} (not found)`)
    const autonomy = lines.find((l) => l.startsWith("autonomy "))!
    const flag = lines.find((l) => l.startsWith("mutatingSubagents "))!
    assert.match(autonomy, /^autonomy\s+bold\s+env FORKJOIN_AUTONOMY$/)
    assert.strictEqual(autonomy.indexOf("bold"), flag.indexOf("true"))
    assert.include(lines.join("\n"), "gate.trustedKeys     (none)")
    assert.include(lines.join("\n"), "mutating children: ungated")
  })
})

describe("Config.load", () => {
  it.effect("reads forkjoin.config.json from the workspace root", () =>
    Effect.gen(function*() {
      const ws = tempDir()
      fs.writeFileSync(path.join(ws, "forkjoin.config.json"), JSON.stringify({ autonomy: "safe", gate: { evidence: "e.json" } }))
      const c = yield* Config.load(ws, {})
      assert.strictEqual(c.autonomy.value, "safe")
      assert.isTrue(c.file.found)
      assert.strictEqual(c.evidence.value, path.join(ws, "e.json"))
    }))

  it.effect("no file: defaults", () =>
    Effect.gen(function*() {
      const c = yield* Config.load(tempDir(), {})
      assert.isFalse(c.file.found)
      assert.strictEqual(c.autonomy.value, "supervised")
    }))

  it.effect("an unreadable file (a folder in its place) is config_invalid naming it", () =>
    Effect.gen(function*() {
      const ws = tempDir()
      fs.mkdirSync(path.join(ws, "forkjoin.config.json"))
      const exit = yield* Effect.exit(Config.load(ws, {}))
      assert.isTrue(Exit.isFailure(exit))
      const e = yield* Effect.flip(Config.load(ws, {}))
      assert.strictEqual(e.code, "config_invalid")
      assert.include(e.message, `${path.join(ws, "forkjoin.config.json")} cannot be read (EISDIR`)
    }))
})

describe("Age", () => {
  it("parses s, m, h, d and refuses anything else", () => {
    assert.deepStrictEqual(
      ["45s", "30m", "24h", "7d"].map((t) => Duration.toMillis(Result.getOrThrow(Age.parse(t)))),
      [45_000, 1_800_000, 86_400_000, 604_800_000]
    )
    for (const bad of ["7", "7 d", "1w", "-1d", "d", "1.5h", "", "99999999999999999d"]) {
      assert.isTrue(Result.isFailure(Age.parse(bad)), bad)
    }
  })

  it("the reason reads after a setting's name (the same text gc --older-than prints)", () => {
    const r = Age.parse("1w")
    assert.isTrue(Result.isFailure(r) && r.failure === "'1w' is not an age like 30m, 24h or 7d (a whole number followed by s, m, h or d)")
  })

  it("formats the two largest units", () => {
    assert.strictEqual(Age.format(0), "0s")
    assert.strictEqual(Age.format(12_000), "12s")
    assert.strictEqual(Age.format(45 * 60_000), "45m")
    assert.strictEqual(Age.format(8 * 86_400_000 + 3 * 3_600_000 + 59_000), "8d 3h")
    assert.strictEqual(Age.format(86_400_000 + 5 * 60_000), "1d")
  })
})
