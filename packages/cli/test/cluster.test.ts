/**
 * `forkjoin run --cluster` against real `forkjoin runner` processes on one SQLite cluster file:
 * the same plan run locally and on two runners gives the same workspace bytes, outcomes,
 * conflicts, child steps and history (ids, times and where each child ran aside); a runner
 * SIGKILLed after it sent a child's changeset but before it answered costs that attempt only
 * (the child runs again on another runner and is applied once); a runner that never answers
 * times the child out; and a cluster whose storage cannot be reached, or that has no runner,
 * stops the run with exit 2 before any child starts.
 */
import Database from "better-sqlite3"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { comparable, expectSameAsLocal, FILES, lines, PLAN, startRunner } from "./clusterHelpers.ts"
import { buildCli, defaultDb, json, makeSandbox, readHistory, removeSandboxes, runCli, runCliAsync, workspaceTree } from "./helpers.ts"
import { addFile, startModelServer } from "../../drivers/test/support/modelServer.ts"
import { editTask, makeCase, planOf, textAt } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

let cluster = ""
let dir = ""
let addresses: ReadonlyArray<string> = []

beforeAll(async () => {
  dir = makeSandbox().dir
  cluster = `sqlite:${path.join(dir, "cluster.db")}`
  const runners = await Promise.all([startRunner(cluster, dir), startRunner(cluster, dir)])
  addresses = runners.map((r) => r.address)
}, 60_000)

describe("forkjoin run --cluster", () => {
  it("gives the workspace, outcomes, conflicts, steps and history the same run gives locally", () => {
    const { here: h, remote, there: t } = expectSameAsLocal(cluster)
    expect(textAt(remote.ws, "src/a.txt")).toBe(lines(8, "a").replace("a2", "A2").replace("a7", "A7"))
    // The run really went to the runners: every child says which one ran it, and the recorded outcome too.
    for (const r of t.results) expect(addresses).toContain(r.ranOn)
    for (const o of t.mergeExecution.outcomes) expect(addresses).toContain(o.ranOn)
    expect(h.results.every((r: { ranOn?: string }) => r.ranOn === undefined)).toBe(true)
    // The outcomes cover what the plan exercises: merges, a conflict, a refused edit.
    const status = Object.fromEntries(t.mergeExecution.outcomes.map((o: { childId: string; status: string }) => [o.childId, o.status]))
    expect(status).toMatchObject({ top: "applied", bottom: "auto_merged", x: "applied", y: "conflicted_unresolved", add: "applied", del: "applied", mv: "applied" })
  }, 120_000)
})

describe("the workspace's cluster", () => {
  it("run uses the configuration's cluster unless --cluster says otherwise ('none': here); status lists its runners", () => {
    const plan = planOf([editTask("cfg", ["src/a.txt"], ["*** Update File: src/a.txt", "@@", "-a1", "+CFG"])])
    const [onRunners, here] = [makeCase(FILES, plan), makeCase(FILES, plan)]
    for (const c of [onRunners, here]) fs.writeFileSync(path.join(c.ws, "forkjoin.config.json"), JSON.stringify({ cluster: { url: cluster } }))
    const ran = runCli(["run", onRunners.planFile, "--workspace", onRunners.ws, "--json"])
    expect(ran.status, ran.stderr).toBe(0)
    expect(addresses).toContain(json(ran.stdout).results[0].ranOn)
    const local = runCli(["run", here.planFile, "--workspace", here.ws, "--cluster", "none", "--json"])
    expect(local.status, local.stderr).toBe(0)
    expect(json(local.stdout).results[0].ranOn).toBeUndefined()
    expect(workspaceTree(here.ws)).toEqual(workspaceTree(onRunners.ws))
    const listed = runCli(["status", "--workspace", onRunners.ws, "--json"])
    expect(listed.status, listed.stderr).toBe(0)
    expect(json(listed.stdout).cluster).toEqual({ url: cluster, runners: [...addresses].sort(), unhealthy: [] })
    expect(runCli(["status", "--workspace", onRunners.ws]).stdout).toContain(`cluster ${cluster}: 2 runner(s): ${[...addresses].sort().join(", ")}`)
    const down = runCli(["status", "--workspace", onRunners.ws, "--cluster", "postgres://forkjoin:hunter2@127.0.0.1:1/none", "--json"])
    expect(down.status).toBe(0)
    expect(json(down.stdout).cluster.error).toContain("storage_unreachable")
    expect(down.stdout).not.toContain("hunter2")
  }, 60_000)
})

describe("faults on a cluster", () => {
  it.concurrent("a runner SIGKILLed after sending a changeset, before answering: the child runs again elsewhere and is applied once", async () => {
    const own = makeSandbox().dir
    const url = `sqlite:${path.join(own, "cluster.db")}`
    const doomed = await startRunner(url, own, { FORKJOIN_FAULT: "runner:after-upload:1" })
    const c = makeCase(FILES, planOf([{ ...editTask("only", ["src/a.txt"], ["*** Update File: src/a.txt", "@@", "-a1", "+ONLY"]), maxAttempts: 2, timeoutMs: 60_000 }]))
    const run = runCliAsync(["run", c.planFile, "--workspace", c.ws, "--cluster", url, "--json"], {})
    // The only runner dies in its first attempt; the next one joins after, and takes the retry.
    await doomed.gone
    expect(doomed.child.signalCode).toBe("SIGKILL")
    const survivor = await startRunner(url, own)
    const r = await run
    expect(r.status, r.stderr).toBe(0)
    const out = json(r.stdout)
    expect(out.results[0]).toMatchObject({ id: "only", status: "finished", attempts: 2, ranOn: survivor.address })
    expect(out.mergeExecution.outcomes).toMatchObject([{ childId: "only", status: "applied", ranOn: survivor.address }])
    expect(textAt(c.ws, "src/a.txt")).toBe(lines(8, "a").replace("a1\n", "ONLY\n"))
    const applied = readHistory(defaultDb(c.ws)).records.filter((rec) => JSON.stringify(rec).includes(`subagent_merge:${out.runId}/only`))
    expect(applied).toHaveLength(1)
  }, 120_000)

  it("the parent SIGKILLed mid-join (after a child, mid-transaction, mid-commit), then --resume: every child applied once, as the local run leaves it", () => {
    const local = makeCase(FILES, PLAN)
    fs.chmodSync(path.join(local.ws, "scripts/run.sh"), 0o755)
    runCli(["run", local.planFile, "--workspace", local.ws, "--json"])
    const mergesOf = (ws: string) =>
      readHistory(defaultDb(ws)).records.map((r) => (r as { transactionId?: string }).transactionId).filter((t) => t?.startsWith("subagent_merge:"))
    for (const fault of ["merge:after-child:2", "stage:7", "commit:after-rename:1"]) {
      const remote = makeCase(FILES, PLAN)
      fs.chmodSync(path.join(remote.ws, "scripts/run.sh"), 0o755)
      const killed = runCli(["run", remote.planFile, "--workspace", remote.ws, "--cluster", cluster, "--json"], { env: { FORKJOIN_FAULT: fault } })
      expect(killed.signal, fault).toBe("SIGKILL")
      const interrupted = json(runCli(["status", "--workspace", remote.ws, "--cluster", "none", "--json"]).stdout).interruptedRuns
      expect(interrupted, fault).toHaveLength(1)
      const resumed = runCli(["run", "--resume", interrupted[0].runId, "--workspace", remote.ws, "--json"])
      expect([1, 0], fault).toContain(resumed.status)
      expect(workspaceTree(remote.ws), fault).toEqual(workspaceTree(local.ws))
      const merges = mergesOf(remote.ws)
      expect(new Set(merges).size, fault).toBe(merges.length)
      expect(merges.length, fault).toBe(mergesOf(local.ws).length)
      // The join resumed as its workflow: one activity per mutating child and one to finish, each done once.
      const state = new Database(path.join(remote.ws, ".forkjoin", "runs", interrupted[0].runId, "join.db"), { readonly: true })
      try {
        const steps = state.prepare("SELECT tag, processed FROM cluster_messages").all() as Array<{ tag: string; processed: number }>
        expect(steps.filter((m) => m.tag === "activity"), fault).toHaveLength((PLAN.tasks as Array<{ readonly mode: string }>).filter((t) => t.mode === "transactional_write").length + 1)
        expect(steps.every((m) => m.processed === 1), fault).toBe(true)
      } finally {
        state.close()
      }
    }
  }, 90_000)

  it("a cluster run's join is a durable workflow: a failure after 3 children rolls each back, strictly, newest first", () => {
    const c = makeCase(FILES, PLAN)
    fs.chmodSync(path.join(c.ws, "scripts/run.sh"), 0o755)
    const before = workspaceTree(c.ws)
    const failed = runCli(["run", c.planFile, "--workspace", c.ws, "--cluster", cluster, "--json"], { env: { FORKJOIN_FAULT: "join:fail-after-child:3" } })
    expect(failed.status).toBe(1)
    expect(failed.stdout).toContain("join:fail-after-child")
    expect(workspaceTree(c.ws)).toEqual(before)
    const run = json(runCli(["runs", "--workspace", c.ws, "--json"]).stdout).runs[0].run
    expect(run.outcomes.slice(0, 3).map((o: { status: string }) => o.status)).toEqual(["apply_failed_rolled_back", "apply_failed_rolled_back", "apply_failed_rolled_back"])
    expect(run.outcomes[0].reason).toContain("rolled back (strictly)")
    const records = readHistory(defaultDb(c.ws)).records as Array<{ transactionId: string }>
    const rollbacks = records.map((r) => r.transactionId).filter((t) => t.startsWith("rollback:"))
    expect(rollbacks).toHaveLength(3)
    // Newest first: the third child's merge is undone before the second's and the first's.
    const merges = records.map((r) => r.transactionId).filter((t) => t.startsWith("subagent_merge:"))
    expect(merges.map((t) => t.split("/")[1])).toEqual(["top", "bottom", "x"])
    // In commit order, the rollbacks undo x, then bottom, then top.
    expect(rollbacks.map((t) => t.split("/")[1])).toEqual(["x", "bottom", "top"])
    expect(fs.existsSync(path.join(c.ws, ".forkjoin", "runs", run.runId, "join.db"))).toBe(true)
  }, 60_000)

  it.concurrent("a runner that never answers: the child times out as it would locally, nothing of it is applied", async () => {
    const own = makeSandbox().dir
    const url = `sqlite:${path.join(own, "cluster.db")}`
    const stuck = await startRunner(url, own)
    stuck.child.kill("SIGSTOP")
    try {
      const c = makeCase(FILES, planOf([{ ...editTask("slow", ["src/a.txt"], ["*** Update File: src/a.txt", "@@", "-a1", "+SLOW"]), timeoutMs: 1_000 }]))
      const r = await runCliAsync(["run", c.planFile, "--workspace", c.ws, "--cluster", url, "--json"], {})
      expect(r.status, `${r.stdout}${r.stderr}`).toBe(1)
      const out = json(r.stdout)
      expect(out.results[0]).toMatchObject({ id: "slow", status: "timed_out", attempts: 1 })
      expect(out.results[0].ranOn).toBeUndefined()
      expect(out.mergeExecution.outcomes).toMatchObject([{ childId: "slow", status: "missing_changeset" }])
      expect(textAt(c.ws, "src/a.txt")).toBe(lines(8, "a"))
    } finally {
      stuck.child.kill("SIGKILL")
    }
  }, 60_000)

  it("storage that cannot be reached, or a cluster with no runner: exit 2 naming it, before any child starts", () => {
    const c = makeCase(FILES, PLAN)
    const before = workspaceTree(c.ws)
    const unreachable = runCli(["run", c.planFile, "--workspace", c.ws, "--cluster", "postgres://forkjoin:hunter2@127.0.0.1:1/none"])
    expect(unreachable.status).toBe(2)
    expect(unreachable.stderr).toContain("storage_unreachable")
    expect(unreachable.stderr).not.toContain("hunter2")
    const empty = runCli(["run", c.planFile, "--workspace", c.ws, "--cluster", `sqlite:${path.join(c.dir, "empty.db")}`])
    expect(empty.status).toBe(2)
    expect(empty.stderr).toContain("no_runners")
    expect(empty.stderr).toContain("forkjoin runner --cluster")
    expect(workspaceTree(c.ws)).toEqual(before)
    expect(fs.existsSync(path.join(c.ws, ".forkjoin", "runs"))).toBe(false)
    const runner = runCli(["runner", "--cluster", "postgres://forkjoin:hunter2@127.0.0.1:1/none"])
    expect(runner.status).toBe(2)
    expect(runner.stderr).toContain("storage_unreachable")
    expect(runner.stderr).not.toContain("hunter2")
  }, 60_000)

  it("refuses what a runner cannot do yet, and combinations that mean nothing, as usage errors", () => {
    const c = makeCase(FILES, planOf([{ ...editTask("checked", ["src/a.txt"], ["*** Update File: src/a.txt", "@@", "-a1", "+A1"]), childVerify: { command: ["true"], timeoutMs: 10_000 } }]))
    const checked = runCli(["run", c.planFile, "--workspace", c.ws, "--cluster", cluster])
    expect(checked.status).toBe(2)
    expect(checked.stderr).toContain("checked")
    const both = runCli(["run", c.planFile, "--workspace", c.ws, "--cluster", cluster, "--export-only"])
    expect(both.status).toBe(2)
    expect(textAt(c.ws, "src/a.txt")).toBe(lines(8, "a"))
  })
})

describe("children that test their own work, on runners", () => {
  const SECRET = { FORKJOIN_CLUSTER_SECRET: "a shared cluster secret, 32 bytes or more" }
  const expecting = (file: string, want: string) => ({
    command: [process.execPath, "-e", `const t = require('fs').readFileSync(${JSON.stringify(file)}, 'utf8'); console.log('read ' + JSON.stringify(t)); process.exit(t === ${JSON.stringify(want)} ? 0 : 4)`],
    timeoutMs: 60_000
  })
  const CHECKED = planOf([
    { ...editTask("good", ["src/a.txt"], ["*** Update File: src/a.txt", "@@", "-a1", "+A1"]), childVerify: expecting("src/a.txt", lines(8, "a").replace("a1", "A1")) },
    { ...editTask("bad", ["src/b.txt"], ["*** Update File: src/b.txt", "@@", "-b1", "+B1"]), maxAttempts: 2, childVerify: expecting("src/b.txt", "never\n") }
  ])

  it("runs each check in the runner's own checkout and ends as locally; a runner with a secret speaks only TLS keyed by it", async () => {
    const own = makeSandbox().dir
    const url = `sqlite:${path.join(own, "cluster.db")}`
    const runner = await startRunner(url, own, SECRET)
    const local = makeCase(FILES, CHECKED)
    const remote = makeCase(FILES, CHECKED)
    const here = runCli(["run", local.planFile, "--workspace", local.ws, "--json"])
    const there = await runCliAsync(["run", remote.planFile, "--workspace", remote.ws, "--cluster", url, "--json"], SECRET)
    expect(there.status, there.stderr).toBe(here.status)
    const [h, t] = [json(here.stdout), json(there.stdout)]
    expect(workspaceTree(remote.ws)).toEqual(workspaceTree(local.ws))
    expect(comparable(t.results, remote.ws)).toEqual(comparable(h.results, local.ws))
    expect(comparable(t.mergeExecution, remote.ws)).toEqual(comparable(h.mergeExecution, local.ws))
    expect(t.results.find((r: { id: string }) => r.id === "bad")).toMatchObject({ status: "check_failed", attempts: 2, ranOn: runner.address, childVerify: { status: "failed", output: ["read \"B1\\nb2\\nb3\\nb4\\nb5\\nb6\\nb7\\nb8\\n\""] } })
    const bad = t.results.find((r: { id: string }) => r.id === "bad")
    expect(fs.readFileSync(path.join(bad.artifacts, "childVerify.log"), "utf8")).toContain("exit 4")
    // With a secret the runner speaks TLS keyed by it: a plain connection gets nothing and is closed.
    const [host, port] = runner.address.split(":")
    const answer = await new Promise<string>((resolve) => {
      let got = ""
      const socket = net.connect(Number(port), host!, () => socket.write("GET / HTTP/1.0\r\n\r\n"))
      socket.on("data", (d) => (got += d.toString("latin1")))
      socket.on("close", () => resolve(got))
      socket.on("error", () => undefined)
    })
    expect(answer).not.toContain("HTTP")
    expect(answer.length).toBeLessThan(16)
  }, 120_000)
})

describe("model-driven children on runners", () => {
  it("a prompt task runs on the runner with the runner's model, its conversation kept by the parent", async () => {
    const server = await startModelServer("openai", (c) =>
      c.turn === 0 ? { calls: [{ name: "apply_patch", args: addFile("src/note.md", "from the runner's model") }] } : { calls: [{ name: "finish", args: {} }] })
    try {
      const own = makeSandbox().dir
      const url = `sqlite:${path.join(own, "cluster.db")}`
      // The runner's model: its own folder's configuration and the provider variables it is given.
      const home = path.join(own, "runner-home")
      fs.mkdirSync(home)
      fs.writeFileSync(path.join(home, "forkjoin.config.json"), JSON.stringify({ models: { model: "test-model" } }))
      const runner = await startRunner(url, own, { OPENAI_BASE_URL: server.url, OPENAI_API_KEY: "test-key" }, home)
      const c = makeCase(FILES, planOf([{ id: "ask", mode: "transactional_write", writeScope: ["src"], prompt: "add a note" }]))
      // No model here: the parent needs none for children that run on runners.
      const r = await runCliAsync(["run", c.planFile, "--workspace", c.ws, "--cluster", url, "--json"], {})
      expect(r.status, `${r.stdout}${r.stderr}`).toBe(0)
      const out = json(r.stdout)
      expect(out.results[0]).toMatchObject({ id: "ask", status: "finished", ranOn: runner.address })
      expect(textAt(c.ws, "src/note.md")).toBe("from the runner's model\n")
      const transcript = path.join(out.results[0].artifacts, "transcript.json")
      expect(fs.existsSync(transcript), r.stderr).toBe(true)
      expect(fs.readFileSync(transcript, "utf8")).toContain("add a note")
    } finally {
      await server.close()
    }
  }, 60_000)
})
