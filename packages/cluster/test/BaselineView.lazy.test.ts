/**
 * Lazy baselines: a child that reads 8 files of a 20,000-file workspace fetches the root, the
 * directory nodes on those 8 paths and those 8 blobs, nothing else (requests and bytes
 * counted at the client); reading them again crosses nothing. The whole listing would be
 * many times larger.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as ObjectClient from "../src/ObjectClient.ts"
import { layers, makeWorkspace, removeSandboxes, served } from "./helpers.ts"

afterAll(removeSandboxes)

const pad = (n: number) => String(n).padStart(2, "0")
// 20 packages × 20 modules × 50 files = 20,000 files.
const fileAt = (p: number, m: number, f: number) => `pkg-${pad(p)}/mod-${pad(m)}/file-${pad(f)}.ts`

const workspace = () => {
  const ws = makeWorkspace()
  for (let p = 0; p < 20; p++) {
    for (let m = 0; m < 20; m++) {
      const dir = path.join(ws, `pkg-${pad(p)}`, `mod-${pad(m)}`)
      fs.mkdirSync(dir, { recursive: true })
      for (let f = 0; f < 50; f++) fs.writeFileSync(path.join(dir, `file-${pad(f)}.ts`), `export const v${p}_${m}_${f} = ${p * 1000 + m * 50 + f}\n`)
    }
  }
  return ws
}

// Eight files in eight different modules of six packages: 1 root + 6 package nodes + 8 module nodes.
const READ = [fileAt(0, 0, 0), fileAt(0, 1, 7), fileAt(3, 4, 9), fileAt(3, 5, 1), fileAt(7, 7, 7), fileAt(11, 0, 49), fileAt(15, 19, 3), fileAt(19, 19, 19)]

describe("BaselineView over 20,000 files", () => {
  it.live("reading 8 files fetches only the nodes on their paths and their blobs, once", () => {
    const ws = workspace()
    return Effect.gen(function*() {
      const { baseline, client } = yield* served()
      assert.strictEqual(baseline.files, 20_000)
      // root + 20 packages + 400 modules.
      assert.strictEqual(baseline.tree.nodes.size, 421)
      const view = ObjectClient.baselineView(client, baseline.tree.root)
      for (const p of READ) {
        const bytes = yield* view.read(p)
        assert.strictEqual(new TextDecoder().decode(bytes), fs.readFileSync(path.join(ws, p), "utf8"))
      }
      const first = client.stats()
      assert.strictEqual(first.requests, 1 + 6 + 8 + 8)
      const allNodes = [...baseline.tree.nodes.values()].reduce((n, b) => n + b.length, 0)
      // What crossed: the 15 nodes and 8 blobs (base64), a small fraction of the listing alone.
      assert.isBelow(first.received, allNodes / 20)
      for (const p of READ) yield* view.read(p)
      assert.deepStrictEqual(client.stats(), first)
    }).pipe(Effect.scoped, Effect.provide(layers(ws)))
  }, 180_000)
})
