/**
 * forkjoin outside its clone: the `npm pack` tarball installed into a fresh project (offline
 * where the npm cache allows) gives a working `forkjoin` binary and a typed library, with no
 * Node engine warnings. One pack and one install per run.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { projectRoot } from "../support/tree.ts"

const rootPackage = JSON.parse(fs.readFileSync(path.join(projectRoot, "package.json"), "utf8"))
const typesNodeVersion: string = JSON.parse(fs.readFileSync(path.join(projectRoot, "node_modules/@types/node/package.json"), "utf8")).version
const dirs: Array<string> = []
const children: Array<ChildProcess> = []
const temp = (prefix: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  dirs.push(dir)
  return dir
}
let project = ""
let tarball = ""
let installErr = ""

const npm = (args: ReadonlyArray<string>, cwd: string) => {
  const run = spawnSync("npm", [...args], { cwd, encoding: "utf8", env: { ...process.env, npm_config_update_notifier: "false" } })
  if (run.status !== 0) throw new Error(`npm ${args.join(" ")} failed (${run.status}):\n${run.stdout}\n${run.stderr}`)
  return run
}

beforeAll(() => {
  const pack = temp("fj-pack-")
  // The global setup built the bundles and declarations: pack them without rebuilding.
  const packed = JSON.parse(npm(["pack", "--ignore-scripts", "--json", "--pack-destination", pack], projectRoot).stdout)
  tarball = path.join(pack, packed[0].filename)
  project = temp("fj-consumer-")
  fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
  // better-sqlite3 installs through prebuild-install, which cannot download a prebuilt addon
  // here and falls back to a minute-long C++ compile. The addon this checkout already built is
  // offered as a local prebuild (named and laid out as prebuild-install expects; it loads it before
  // accepting it): npm still resolves, fetches and installs every package of OUR tarball. When the
  // resolved better-sqlite3 is another version, the name does not match and it compiles as before.
  const sqlite = path.join(projectRoot, "node_modules/better-sqlite3")
  const sqliteVersion: string = JSON.parse(fs.readFileSync(path.join(sqlite, "package.json"), "utf8")).version
  const prebuilds = temp("fj-prebuilds-")
  const prebuild = path.join(prebuilds, `better-sqlite3-v${sqliteVersion}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`)
  const tar = spawnSync("tar", ["-czf", prebuild, "-C", sqlite, "build/Release/better_sqlite3.node"], { encoding: "utf8" })
  if (tar.status !== 0) throw new Error(`tar failed (${tar.status}): ${tar.stderr}`)
  // prebuild-install reads its settings from the nearest .prebuild-installrc up from the package.
  fs.writeFileSync(path.join(project, ".prebuild-installrc"), `local-prebuilds=${prebuilds}\n`)
  const install = npm(["install", "--prefer-offline", "--no-audit", "--no-fund", "--prefix", project, tarball, `@types/node@${typesNodeVersion}`], project)
  installErr = install.stderr
}, 900_000)

// A stopped forkjoin writes its chunks' code caches into the installed package as it exits:
// the folders are removed only once every child has exited.
afterAll(async () => {
  await Promise.all(children.splice(0).map((child) =>
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
        child.once("exit", () => resolve())
        child.kill()
      })
  ))
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

describe("the npm pack tarball in a fresh project", () => {
  it("installs without Node engine warnings and without the unpublished workspace packages", () => {
    expect(installErr).not.toMatch(/EBADENGINE/)
    const installed = JSON.parse(fs.readFileSync(path.join(project, "node_modules/@forkjoin/forkjoin/package.json"), "utf8"))
    expect(Object.keys(installed.dependencies).sort()).toEqual([
      "better-sqlite3",
      "effect",
      "lz4-napi",
      "tree-sitter-javascript",
      "tree-sitter-json",
      "tree-sitter-python",
      "tree-sitter-typescript",
      "web-tree-sitter"
    ])
    expect(fs.existsSync(path.join(project, "node_modules/@forkjoin/cli"))).toBe(false)
  })

  it("gives a forkjoin binary that prints its version", () => {
    const run = spawnSync(path.join(project, "node_modules/.bin/forkjoin"), ["--version"], { cwd: temp("fj-elsewhere-"), encoding: "utf8" })
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout).toContain(rootPackage.version)
  })

  it("serves MCP: forkjoin mcp answers initialize from another folder", async () => {
    const ws = temp("fj-mcp-ws-")
    const child = spawn(path.join(project, "node_modules/.bin/forkjoin"), ["mcp", "--workspace", ws], { cwd: temp("fj-elsewhere-"), stdio: ["pipe", "pipe", "pipe"] })
    children.push(child)
    let stderr = ""
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    const reply = new Promise<Record<string, unknown>>((resolve, reject) => {
      let out = ""
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString()
        for (const line of out.split("\n").slice(0, -1)) {
          const message = JSON.parse(line)
          if (message.id === 1) resolve(message)
        }
      })
      child.on("exit", (code) => reject(new Error(`forkjoin mcp exited (${code}) before answering: ${stderr}`)))
    })
    child.stdin.write(`${JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "install-test", version: "1" } }
    })}\n`)
    const message = await reply
    expect(message).toMatchObject({ jsonrpc: "2.0", id: 1, result: { serverInfo: { name: "forkjoin" } } })
  })

  it("imports the library from a consumer file and applies a patch without options", () => {
    const ws = temp("fj-lib-ws-")
    fs.writeFileSync(path.join(ws, "a.txt"), "one\n")
    fs.writeFileSync(path.join(project, "consumer.mjs"), `
      import { openWorkspace, EngineError } from "@forkjoin/forkjoin"
      const ws = await openWorkspace(process.argv[2])
      const record = await ws.applyPatch("*** Begin Patch\\n*** Update File: a.txt\\n@@\\n-one\\n+two\\n*** End Patch")
      let error
      try { await ws.applyPatch("*** Begin Patch\\n*** Update File: a.txt\\n@@\\n-nope\\n+x\\n*** End Patch") } catch (e) { error = e }
      await ws.close()
      console.log(JSON.stringify({ thread: record.threadId, typed: error instanceof EngineError, code: error?.code }))
    `)
    const run = spawnSync(process.execPath, ["consumer.mjs", ws], { cwd: project, encoding: "utf8" })
    expect(run.status, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout)).toEqual({ thread: "library", typed: true, code: "context_not_found" })
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("two\n")
  })

  it("type-checks a strict consumer against the shipped declarations with no errors", () => {
    fs.writeFileSync(path.join(project, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "nodenext",
        moduleResolution: "nodenext",
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        skipLibCheck: false,
        noEmit: true,
        types: ["node"]
      },
      files: ["consumer.ts"]
    }))
    fs.writeFileSync(path.join(project, "consumer.ts"), `
import { EngineError, openWorkspace, type Workspace } from "@forkjoin/forkjoin"

export const edit = async (dir: string, patch: string): Promise<string> => {
  const ws: Workspace = await openWorkspace(dir)
  try {
    const record = await ws.applyPatch(patch, { threadId: "t1", turnId: "turn-1", profile: "native" })
    await ws.applyPatch(patch)
    const page = await ws.history.timeline({ caller: "t1" })
    return \`\${record.transactionId} \${page.items.length}\`
  } catch (e) {
    if (e instanceof EngineError) return \`\${e.code} \${e.stage} \${e.paths.join(",")}\`
    throw e
  } finally {
    await ws.close()
  }
}
`)
    const tsc = path.join(projectRoot, "node_modules/typescript/bin/tsc")
    const run = spawnSync(process.execPath, [tsc, "-p", path.join(project, "tsconfig.json")], { cwd: project, encoding: "utf8" })
    expect(`${run.stdout}${run.stderr}`).toBe("")
    expect(run.status).toBe(0)
  })
})
