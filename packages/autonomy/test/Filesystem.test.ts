import { assert, describe, it } from "@effect/vitest"
import type { FilesystemFacts } from "@forkjoin/schema/Evidence"
import * as fs from "node:fs"
import * as path from "node:path"
import { vi } from "vitest"
import { AutonomyError } from "../src/AutonomyError.ts"
import * as Filesystem from "../src/Filesystem.ts"
import { tempDir } from "./helpers.ts"

// Every synchronous filesystem call, by name, while `calls.on` (the probe's cost, counted).
const calls = vi.hoisted(() => ({ on: false, names: [] as Array<string>, written: 0 }))
vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>()
  const counted = Object.fromEntries(
    Object.entries(real).map(([name, value]) =>
      typeof value === "function" && name.endsWith("Sync")
        ? [name, (...args: Array<unknown>) => {
          if (calls.on) {
            calls.names.push(name)
            if (name === "writeFileSync" || name === "writeSync") calls.written += String(args[1]).length
          }
          return (value as (...a: Array<unknown>) => unknown)(...args)
        }]
        : [name, value]
    )
  )
  return { ...counted, default: counted }
})

describe("Filesystem.factsOf", () => {
  it("checks a real temp folder: a Linux ext4/tmpfs-like filesystem has every capability", () => {
    const dir = tempDir()
    const facts = Filesystem.factsOf(dir)
    assert.strictEqual(facts.type, Filesystem.typeName(fs.statfsSync(dir).type))
    assert.isFalse(facts.type.startsWith("unknown:"), facts.type)
    assert.isTrue(facts.atomicRename)
    assert.isTrue(facts.fsyncHonoured)
    assert.isTrue(facts.caseSensitive)
    assert.isTrue(facts.symlinks)
  })

  it("leaves nothing behind: the probe folder and a .forkjoin it created are removed", () => {
    const dir = tempDir()
    Filesystem.factsOf(dir)
    assert.deepStrictEqual(fs.readdirSync(dir), [])
  })

  it("keeps an existing .forkjoin and its contents, removing only its own folder", () => {
    const dir = tempDir()
    fs.mkdirSync(path.join(dir, ".forkjoin", "runs"), { recursive: true })
    Filesystem.factsOf(dir)
    assert.deepStrictEqual(fs.readdirSync(path.join(dir, ".forkjoin")), ["runs"])
  })

  it("two runs on one filesystem agree", () => {
    const dir = tempDir()
    assert.deepStrictEqual(Filesystem.sameKind(Filesystem.factsOf(dir), Filesystem.factsOf(dir)), [])
  })

  it("a folder on another filesystem (tmpfs /dev/shm here) differs exactly by its type", () => {
    const tmp = Filesystem.factsOf(tempDir())
    const other = tempDir(fs.existsSync("/dev/shm") ? "/dev/shm" : undefined)
    const facts = Filesystem.factsOf(other)
    assert.strictEqual(facts.type, Filesystem.typeName(fs.statfsSync(other).type))
    assert.deepStrictEqual(Filesystem.sameKind(facts, tmp), facts.type === tmp.type ? [] : ["type"])
  })

  it("a folder that cannot hold the probe is filesystem_unprobeable naming it", () => {
    const dir = tempDir()
    const file = path.join(dir, "plain-file")
    fs.writeFileSync(file, "x")
    try {
      Filesystem.factsOf(file)
      assert.fail("expected a refusal")
    } catch (e) {
      assert.instanceOf(e, AutonomyError)
      if (!(e instanceof AutonomyError)) return
      assert.strictEqual(e.code, "filesystem_unprobeable")
      assert.include(e.message, `Cannot create ${path.join(file, ".forkjoin")}`)
      assert.include(e.message, "ENOTDIR")
    }
  })

  it("is cheap enough for every gate call: a few dozen calls on a few tiny files, two fsyncs", () => {
    const dir = tempDir()
    calls.on = true
    try {
      Filesystem.factsOf(dir)
    } finally {
      calls.on = false
    }
    // One file fsync and one directory fsync, whatever else changes.
    assert.deepStrictEqual(calls.names.filter((n) => n === "fsyncSync"), ["fsyncSync", "fsyncSync"])
    assert.isAtMost(calls.names.length, 40, calls.names.join(", "))
    assert.isAtMost(calls.written, 64)
  })
})

describe("Filesystem.typeName and sameKind", () => {
  it("maps Linux magic numbers to names, others to unknown:0x…", () => {
    assert.strictEqual(Filesystem.typeName(0xef53, "linux"), "ext4")
    assert.strictEqual(Filesystem.typeName(0x01021994, "linux"), "tmpfs")
    assert.strictEqual(Filesystem.typeName(0x9123683e, "linux"), "btrfs")
    assert.strictEqual(Filesystem.typeName(0x58465342, "linux"), "xfs")
    assert.strictEqual(Filesystem.typeName(0x794c7630, "linux"), "overlayfs")
    assert.strictEqual(Filesystem.typeName(0x2fc12fc1, "linux"), "zfs")
    assert.strictEqual(Filesystem.typeName(0x6969, "linux"), "nfs")
    assert.strictEqual(Filesystem.typeName(0x65735546, "linux"), "fuse")
    assert.strictEqual(Filesystem.typeName(0x12345, "linux"), "unknown:0x12345")
    // A negative f_type (a signed 32-bit read) names the same filesystem.
    assert.strictEqual(Filesystem.typeName(0x9123683e | 0, "linux"), "btrfs")
    assert.strictEqual(Filesystem.typeName(0x1a, "darwin"), "darwin:0x1a")
  })

  it("lists every differing fact", () => {
    const a: FilesystemFacts = { type: "ext4", atomicRename: true, fsyncHonoured: true, caseSensitive: true, symlinks: true }
    assert.deepStrictEqual(Filesystem.sameKind(a, { ...a }), [])
    assert.deepStrictEqual(Filesystem.sameKind(a, { ...a, type: "ntfs", caseSensitive: false, symlinks: false }), ["type", "caseSensitive", "symlinks"])
    assert.deepStrictEqual(Filesystem.sameKind(a, { ...a, atomicRename: false, fsyncHonoured: false }), ["atomicRename", "fsyncHonoured"])
  })
})
