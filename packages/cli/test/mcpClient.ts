/**
 * An MCP client (the official SDK) connected over stdio to the built `forkjoin mcp`, for tests:
 * no model variables inherited, mutating children at `bold`.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { BIN } from "./helpers.ts"

const MODEL_VARS = new Set(["OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"])

/** A client named `info` connected to `forkjoin mcp --workspace ws ...args`, with `extraEnv` set. */
export const connectMcp = async (
  ws: string,
  args: ReadonlyArray<string> = [],
  info: { readonly name: string; readonly version: string } = { name: "forkjoin-test", version: "1.0.0" },
  extraEnv: Record<string, string> = {}
): Promise<Client> => {
  const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !MODEL_VARS.has(e[0])))
  const client = new Client(info)
  await client.connect(new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp", "--workspace", ws, ...args],
    env: { ...env, NO_COLOR: "1", FORKJOIN_AUTONOMY: "bold", ...extraEnv },
    stderr: "pipe"
  }))
  return client
}

/** The observation a tool result carries (its first text content, parsed). */
export const observationOf = (result: unknown): any => JSON.parse((result as { content: Array<{ text: string }> }).content[0]!.text)

/**
 * One `forkjoin mcp` session in `thread`: the client `client-<thread>` adds `file` (default `<thread>.md`)
 * and, with `startRun`, runs one scripted child `docs` (adding `docs/<thread>.md`); resolves to
 * that run's id.
 */
export const mcpSession = async (
  ws: string,
  thread: string,
  options: { readonly startRun?: boolean; readonly args?: ReadonlyArray<string>; readonly env?: Record<string, string>; readonly version?: string; readonly file?: string } = {}
): Promise<string | undefined> => {
  const client = await connectMcp(ws, ["--thread", thread, ...(options.args ?? [])], { name: `client-${thread}`, version: options.version ?? "1.0.0" }, options.env)
  const add = (file: string) => ["*** Begin Patch", `*** Add File: ${file}`, "+x", "*** End Patch"].join("\n")
  try {
    const applied = await client.callTool({ name: "apply_patch", arguments: { patch: add(options.file ?? `${thread}.md`) } })
    if (applied.isError === true) throw new Error(`apply_patch failed: ${JSON.stringify(observationOf(applied))}`)
    if (options.startRun !== true) return undefined
    const ran = await client.callTool({
      name: "run_subagents",
      arguments: { tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], actions: [{ apply_patch: { patch: add(`docs/${thread}.md`) } }, { finish: {} }] }] }
    })
    return observationOf(ran).data.runId
  } finally {
    await client.close()
  }
}
