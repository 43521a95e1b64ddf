/**
 * `ConfigFile`: the hints of the config file's messages are read back from the format's
 * annotations (with the examples they show), and the keys allowed at a place are the format's,
 * so a message follows the schema it explains.
 */
import { assert, describe, it } from "@effect/vitest"
import { ForkjoinConfigFile, ModelProviderConfig, SessionLimitsConfig } from "@forkjoin/schema/Autonomy"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as ConfigFile from "../src/ConfigFile.ts"

describe("ConfigFile", () => {
  it("a hint shows its key's examples, as written in the file", () => {
    const examples = Schema.resolveAnnotationsKey(ConfigFile.ConfigFileFormat.fields.gate.schema.fields.maxEvidenceAge)?.examples
    assert.deepStrictEqual(examples, ["30m", "24h", "7d"])
    assert.strictEqual(ConfigFile.hintAt(["gate", "maxEvidenceAge"], 5), "must be an age like 30m, 24h or 7d")
    assert.strictEqual(ConfigFile.hintAt(["gate"], 3), "must be an object like {\"maxEvidenceAge\": \"7d\"}")
    assert.strictEqual(ConfigFile.hintAt(["gate", "trustedKeys", 4], 3), "must be the path of a public key file, relative to the workspace root")
  })

  it("a string near an example gets a \"did you mean\"; keys without a hint have none", () => {
    assert.strictEqual(ConfigFile.hintAt(["autonomy"], "bolt"), "is not an autonomy level; use off, supervised, safe or bold (did you mean \"bold\"?)")
    assert.isUndefined(ConfigFile.hintAt(["models", "provider"], 3))
    assert.isUndefined(ConfigFile.hintAt(["nope"], 3))
  })

  it("the keys allowed at each place are the format's", () => {
    assert.deepStrictEqual(ConfigFile.knownKeysAt([]), Object.keys(ForkjoinConfigFile.fields))
    assert.deepStrictEqual(ConfigFile.knownKeysAt(["models", "providers", "anthropic"]), Object.keys(ModelProviderConfig.fields))
    assert.deepStrictEqual(ConfigFile.knownKeysAt(["models", "limits", "child"]), Object.keys(SessionLimitsConfig.fields))
    assert.deepStrictEqual(ConfigFile.knownKeysAt(["models", "limits"]), ["parent", "child"])
    assert.isUndefined(ConfigFile.knownKeysAt(["gate", "trustedKeys"]))
  })

  it("the annotated format decodes what the plain one does", () => {
    const file = { autonomy: "safe", gate: { trustedKeys: ["k.pub"] }, models: { providers: { openai: { model: "m" } } } }
    assert.deepStrictEqual(ConfigFile.readConfigFile({ path: "/f", text: JSON.stringify(file) }), Result.succeed(Schema.decodeUnknownSync(ForkjoinConfigFile)(file)))
  })
})
