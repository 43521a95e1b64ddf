/**
 * Choosing a model: `forkjoin.config.json` `models` and the ecosystem's variables resolved with
 * their sources (`@forkjoin/autonomy/Config`), flags over both, a key required only for a
 * public endpoint and never shown; and plan tasks with a `prompt` (exactly one of actions,
 * prompt, changesetFile), refused before any child when nothing can drive them.
 */
import * as Config from "@forkjoin/autonomy/Config"
import * as Models from "@forkjoin/drivers/Models"
import * as OrchestratorRun from "@forkjoin/orchestrator/Run"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import { ThreadId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { makeWorkspace, removeSandboxes } from "./support/agent.ts"

afterAll(removeSandboxes)

const WS = "/tmp/ws-models"
const resolved = (env: Config.Env, file?: unknown) => {
  const r = Config.resolve({ workspace: WS, env, file: file === undefined ? undefined : { path: `${WS}/forkjoin.config.json`, text: JSON.stringify(file) } })
  if (Result.isFailure(r)) throw new Error(r.failure.message)
  return r.success
}

describe("Config: the models section", () => {
  it("built-in defaults, then the file, then the environment for base URLs", () => {
    const none = resolved({})
    expect(none.models.provider).toEqual({ value: "openai", origin: "built_in", source: "built-in default" })
    expect(none.models.providers.openai.baseUrl.value).toBe("https://api.openai.com/v1")
    expect(none.models.providers.anthropic.baseUrl.value).toBe("https://api.anthropic.com")
    expect(none.models.providers.openai.model.value).toBeNull()
    const file = { models: { provider: "anthropic", model: "claude-x", providers: { anthropic: { baseUrl: "http://127.0.0.1:1/", stream: true } } } }
    const fromFile = resolved({}, file)
    expect(fromFile.models.provider.source).toBe("forkjoin.config.json models.provider")
    expect(fromFile.models.providers.anthropic.model).toMatchObject({ value: "claude-x", source: "forkjoin.config.json models.model" })
    // models.model is the default provider's; the other provider has none.
    expect(fromFile.models.providers.openai.model.value).toBeNull()
    expect(fromFile.models.providers.anthropic.baseUrl.source).toBe("forkjoin.config.json models.providers.anthropic.baseUrl")
    const fromEnv = resolved({ ANTHROPIC_BASE_URL: "http://localhost:9" }, file)
    expect(fromEnv.models.providers.anthropic.baseUrl).toMatchObject({ value: "http://localhost:9", origin: "env", source: "env ANTHROPIC_BASE_URL" })
  })

  it("a key is reported as set or unset, from the variable the file names", () => {
    const r = resolved({ MY_KEY: "secret-value" }, { models: { providers: { openai: { apiKeyEnv: "MY_KEY" } } } })
    expect(r.models.providers.openai.apiKeyEnv.value).toBe("MY_KEY")
    expect(r.models.providers.openai.apiKey).toBe("set")
    expect(r.models.providers.anthropic.apiKey).toBe("unset")
    const explained = Config.explain(r)
    expect(JSON.stringify(explained)).not.toContain("secret-value")
    expect(Config.render(explained).join("\n")).toContain("key MY_KEY set")
  })

  it("misspelt and mistyped model settings are refused with their JSON path", () => {
    const typo = Config.resolve({ workspace: WS, env: {}, file: { path: "f", text: JSON.stringify({ models: { limits: { child: { maxStep: 3 } } } }) } })
    expect(Result.isFailure(typo) && typo.failure.message).toMatch(/\$\.models\.limits\.child\.maxStep: unknown key "maxStep" \(did you mean "maxSteps"\?\)/)
    const wrong = Config.resolve({ workspace: WS, env: {}, file: { path: "f", text: JSON.stringify({ models: { provider: "gemini" } }) } })
    expect(Result.isFailure(wrong) && wrong.failure.message).toMatch(/\$\.models\.provider/)
  })
})

describe("Models.choose", () => {
  it("flags over the file; the key read into a Redacted; limits from the file", () => {
    const r = resolved({ OPENAI_API_KEY: "sk-1" }, { models: { model: "gpt-file", limits: { parent: { maxSteps: 9 }, child: { tokenBudget: 500 } } } })
    const chosen = Models.choose(r.models, { OPENAI_API_KEY: "sk-1" }, {})
    expect(Result.isSuccess(chosen)).toBe(true)
    if (Result.isSuccess(chosen)) {
      expect(chosen.success.provider.model).toBe("gpt-file")
      expect(chosen.success.provider.endpoint).toBe("https://api.openai.com/v1/chat/completions")
      expect(Redacted.value(chosen.success.provider.apiKey!)).toBe("sk-1")
      expect(String(chosen.success.provider.apiKey)).not.toContain("sk-1")
      expect(chosen.success.parent).toEqual({ maxSteps: 9 })
      expect(chosen.success.child).toEqual({ tokenBudget: 500 })
    }
    const flagged = Models.choose(r.models, {}, { provider: "anthropic", model: "claude-flag" })
    // Anthropic's public endpoint without ANTHROPIC_API_KEY: refused, naming the variable.
    expect(Result.isFailure(flagged) && flagged.failure.message).toMatch(/set the environment variable ANTHROPIC_API_KEY/)
  })

  it("no model anywhere names --model; a bad base URL names where it came from", () => {
    const none = Models.choose(resolved({}).models, {}, {})
    expect(Result.isFailure(none) && none.failure.message).toMatch(/no model is configured for openai: pass --model NAME/)
    const bad = Models.choose(resolved({ OPENAI_BASE_URL: "not a url" }).models, {}, { model: "m" })
    expect(Result.isFailure(bad) && bad.failure.message).toMatch(/'not a url' is not a URL \(setting: OPENAI_BASE_URL\)/)
  })
})

describe("plan tasks with a prompt", () => {
  const task = { id: "t", mode: "read_only" }
  it("a prompt is the third choice: exactly one of actions, prompt and changesetFile", () => {
    const ok = RunPlan.decode({ schemaVersion: 1, tasks: [{ ...task, prompt: "look" }] })
    expect(Result.isSuccess(ok) && ok.success.tasks[0]!.prompt).toBe("look")
    const both = RunPlan.decode({ schemaVersion: 1, tasks: [{ ...task, prompt: "look", actions: [] }] })
    expect(Result.isFailure(both) && both.failure.message).toMatch(/exactly one of "actions".*"prompt".*"changesetFile"/)
    const empty = RunPlan.decode({ schemaVersion: 1, tasks: [{ ...task, prompt: "" }] })
    expect(Result.isFailure(empty) && empty.failure.path).toBe("$.tasks[0].prompt")
  })

  it("runPlan with prompt tasks and nothing to drive them fails before any child starts", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    const plan = RunPlan.decode({
      schemaVersion: 1,
      tasks: [
        { id: "scripted", mode: "transactional_write", writeScope: ["a.txt"], actions: [{ apply_patch: { patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch" } }, { finish: {} }] },
        { id: "p", mode: "read_only", prompt: "look" }
      ]
    })
    if (Result.isFailure(plan)) throw new Error(plan.failure.message)
    const r = await Effect.runPromise(
      OrchestratorRun.runPlan(plan.success, { planDirectory: ws, callerThreadId: ThreadId.make("t"), admission: { _tag: "Exempt", reason: "test" } }).pipe(
        Effect.result,
        Effect.provide(OrchestratorRun.layer(ws, path.join(ws, ".forkjoin", "history.db")))
      )
    )
    expect(Result.isFailure(r) && r.failure.message).toMatch(/task\(s\) p have a prompt but no model is configured/)
    // The scripted child never ran.
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("a\n")
  })
})
