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
