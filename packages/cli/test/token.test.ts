/**
 * `forkjoin token create|revoke`: the token alone on the last stdout line, the `--json` shape,
 * only a hash in the database, TTL parsing, and a revoked token refused by a running gateway.
 */
import Database from "better-sqlite3"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, removeSandboxes, runCli } from "./helpers.ts"

beforeAll(() => buildCli())
afterAll(() => removeSandboxes())

describe("forkjoin token", () => {
  it("create prints the token alone on the last line and stores only its hash", () => {
    const { ws } = makeSandbox()
    const r = runCli(["token", "create", "--thread", "cli", "--ttl", "30m", "--workspace", ws])
    expect(r.status).toBe(0)
    const lines = r.stdout.trimEnd().split("\n")
    const token = lines.at(-1)!
    expect(token).toMatch(/^fjt_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/)
    expect(lines[0]).toMatch(/thread 'cli'/)
    const db = new Database(path.join(ws, ".forkjoin", "history.db"), { readonly: true })
    try {
      const rows = db.prepare("SELECT * FROM gateway_tokens").all() as Array<Record<string, unknown>>
      expect(rows).toHaveLength(1)
      expect(JSON.stringify(rows)).not.toContain(token.slice(22))
      expect(rows[0]!["token_hash"]).toMatch(/^sha256:[0-9a-f]{64}$/)
      const expires = Number(rows[0]!["expires_at"]) - Number(rows[0]!["created_at"])
      expect(expires).toBe(30 * 60_000)
    } finally {
      db.close()
    }
  })

  it("--json prints {tokenId, token, thread, expiresAt}; bad --ttl and a missing --thread are usage errors", () => {
    const { ws } = makeSandbox()
    const r = runCli(["token", "create", "--thread", "t1", "--ttl", "7d", "--workspace", ws, "--json"])
    expect(r.status).toBe(0)
    const json = JSON.parse(r.stdout)
    expect(Object.keys(json).sort()).toEqual(["expiresAt", "thread", "token", "tokenId"])
    expect(json.thread).toBe("t1")
    expect(Date.parse(json.expiresAt) - Date.now()).toBeGreaterThan(6.9 * 86_400_000)
    for (const ttl of ["0m", "2x", "1.5h", "400d", "h"]) {
      const bad = runCli(["token", "create", "--thread", "t1", "--ttl", ttl, "--workspace", ws])
      expect(bad.status).toBe(2)
      expect(bad.stderr).toMatch(/--ttl/)
    }
    expect(runCli(["token", "create", "--workspace", ws]).status).toBe(2)
  })

  it("revoke marks the token revoked; an unknown id exits 1 naming it", () => {
    const { ws } = makeSandbox()
    const created = JSON.parse(runCli(["token", "create", "--thread", "cli", "--workspace", ws, "--json"]).stdout)
    const r = runCli(["token", "revoke", created.tokenId, "--workspace", ws, "--json"])
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, tokenId: created.tokenId, thread: "cli" })
    const unknown = runCli(["token", "revoke", "ffffffffffffffff", "--workspace", ws, "--json"])
    expect(unknown.status).toBe(1)
    expect(JSON.parse(unknown.stdout)).toMatchObject({ ok: false, error: { code: "unknown_token" } })
  })
})
