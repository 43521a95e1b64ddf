import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Fingerprint from "../src/Fingerprint.ts"
import { scenarioSetDigest } from "../src/Scenarios.ts"
import { tempDir } from "./helpers.ts"

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..")

const fakeRepo = (): string => {
  const root = tempDir()
  const put = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
    fs.writeFileSync(path.join(root, rel), text)
  }
  put("package.json", JSON.stringify({ name: "@forkjoin/forkjoin", version: "9.9.9" }))
  put("packages/a/src/A.ts", "export const a = 1\n")
  put("packages/a/src/internal/x.ts", "export const x = 2\n")
  put("packages/b/src/B.ts", "export const b = 3\n")
  put("probes/src/Probe.ts", "export const p = 4\n")
  return root
}

describe("Fingerprint.sourceDigestOf", () => {
  it("is stable and covers every source file's path and bytes", () => {
    const root = fakeRepo()
    const before = Fingerprint.sourceDigestOf(root)
    assert.match(before, /^sha256:[0-9a-f]{64}$/)
    assert.strictEqual(Fingerprint.sourceDigestOf(root), before)

    fs.writeFileSync(path.join(root, "packages/a/src/internal/x.ts"), "export const x = 20\n")
    const edited = Fingerprint.sourceDigestOf(root)
    assert.notStrictEqual(edited, before)

    fs.renameSync(path.join(root, "probes/src/Probe.ts"), path.join(root, "probes/src/Probe2.ts"))
    assert.notStrictEqual(Fingerprint.sourceDigestOf(root), edited)
  })

  it("ignores tests, builds and non-TypeScript files", () => {
    const root = fakeRepo()
    const before = Fingerprint.sourceDigestOf(root)
    fs.mkdirSync(path.join(root, "packages/a/test"), { recursive: true })
    fs.writeFileSync(path.join(root, "packages/a/test/A.test.ts"), "test")
    fs.mkdirSync(path.join(root, "packages/a/dist"), { recursive: true })
    fs.writeFileSync(path.join(root, "packages/a/dist/a.cjs"), "built")
    fs.writeFileSync(path.join(root, "packages/a/src/notes.md"), "notes")
    fs.writeFileSync(path.join(root, "README.md"), "readme")
    assert.strictEqual(Fingerprint.sourceDigestOf(root), before)
  })

  it("does not depend on where the checkout lives", () => {
    const a = fakeRepo()
    const b = fakeRepo()
    assert.strictEqual(Fingerprint.sourceDigestOf(a), Fingerprint.sourceDigestOf(b))
  })
})

describe("Fingerprint.current", () => {
  it("from source: the root package.json version, the catalogue digest and this checkout's source digest", () => {
    const fp = Fingerprint.current()
    const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { version: string }
    assert.strictEqual(fp.version, pkg.version)
    assert.strictEqual(fp.scenarioSetDigest, scenarioSetDigest)
    assert.match(fp.sourceDigest, /^sha256:[0-9a-f]{64}$/)
    assert.strictEqual(Fingerprint.current(), fp)
  })

  it("finds the repository root above a folder, and none above the filesystem root", () => {
    assert.strictEqual(Fingerprint.repoRootOf(path.join(repoRoot, "packages/autonomy/src")), repoRoot)
    assert.strictEqual(Fingerprint.repoRootOf(repoRoot), repoRoot)
    assert.isUndefined(Fingerprint.repoRootOf(tempDir()))
  })
})
