/**
 * Ids a model gives the parent session's tools (the thread of `history_timeline`, the task ids
 * of `run_subagents`), attacked through the real session against a loopback model server: a
 * traversal (`../x`), an empty id, an empty segment (`a//b`), 300 characters and a NUL are each
 * refused as the tool result `invalid_action` naming the id and the one id rule, before anything
 * runs; nothing is written and the session goes on to finish.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { type Conversation, type SentResult, type Turn } from "./support/modelServer.ts"
import { BAD_IDS } from "../../../test/support/badIds.ts"
import { isParent, removeSandboxes, runAgent } from "./support/agent.ts"

afterAll(removeSandboxes)

describe("ids a model gives the parent's tools follow the one id rule", () => {
  it("history_timeline's thread and run_subagents' task ids are refused as invalid_action, nothing run", async () => {
    let seen: ReadonlyArray<SentResult> = []
    const script = (c: Conversation): Turn => {
      if (!isParent(c.system)) return { calls: [{ name: "finish", args: {} }] }
      if (c.turn === 0) {
        return {
          calls: BAD_IDS.flatMap(([, id]) => [
            { name: "history_timeline", args: { thread: id } },
            { name: "run_subagents", args: { tasks: [{ id, mode: "transactional_write", writeScope: ["made.txt"], prompt: "create made.txt" }] } }
          ])
        }
      }
      seen = c.results
      return { calls: [{ name: "finish", args: {} }] }
    }
    const { outcome, ws } = await runAgent({ kind: "openai", stream: false, script })
    expect(outcome.status).toBe("finished")
    expect(outcome.runs).toEqual([])
    expect(seen.map((r) => [r.name, typeof r.content === "object" ? r.content.code : r.content])).toEqual(
      BAD_IDS.flatMap(() => [["history_timeline", "invalid_action"], ["run_subagents", "invalid_action"]])
    )
    BAD_IDS.forEach(([, id, problem], i) => {
      const [timeline, run] = [seen[2 * i]!.content, seen[2 * i + 1]!.content]
      expect(typeof timeline === "object" ? timeline.message : timeline).toContain(`the id ${JSON.stringify(id)} is refused (${problem})`)
      expect(typeof run === "object" ? run.message : run).toContain(JSON.stringify(id))
    })
    expect(fs.existsSync(path.join(ws, "made.txt"))).toBe(false)
  })
})
