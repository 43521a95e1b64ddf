/**
 * The sha256 of bytes being written, computed on a helper thread while the writer is still
 * writing them: a snapshot read writes its chunks one after another into one buffer, and the
 * helper hashes each stretch as soon as it is final, so the read pays for hashing only past its
 * last chunk. The writer copies each finished stretch into a staging buffer the helper can see
 * (a growable `SharedArrayBuffer` kept for the life of the process: a fresh one per read would
 * cost a page fault for every 4 KiB of it).
 *
 * The helper is one thread per process (or per worker thread that reads), started by the second
 * read large enough to use it: a command that reads one snapshot never pays its start. Until
 * it is running, for a second after a full garbage collection, when it falls behind or dies, and
 * for bytes outside `STAGED`, hashing is done inline: the digest is the same either way.
 */
import type { Sha256Hash } from "@forkjoin/schema"
import { contentAddress, sha256 } from "@forkjoin/patch/Bytes"
import { constants, PerformanceObserver, type PerformanceEntry } from "node:perf_hooks"
import { Worker } from "node:worker_threads"

/** A hash being computed while its bytes are written. */
export interface HashAhead {
  /** `bytes[0, upTo)` are final: the helper may hash up to there. */
  readonly advance: (bytes: Uint8Array, upTo: number) => void
  /** The sha256 of all of `bytes` (each byte advanced past, or not yet, hashed once). */
  readonly digest: (bytes: Uint8Array) => Sha256Hash
}

// Below 1 MiB, hashing inline takes under 0.7 ms: handing it over is not worth the copy.
// Above 32 MiB, staging would keep that much memory for the rest of the process.
const STAGED = { min: 1 << 20, max: 32 << 20 }
// How long a read waits for the helper's digest before hashing inline and retiring the helper.
const PATIENCE_MS = 2_000

// Control words, in one small shared buffer: the job number, how many bytes of it are final, its
// size, the last job done, whether the helper is running, how many bytes of its current job it
// has hashed, and which job that is. The digest follows them.
const JOB = 0
const READY = 1
const SIZE = 2
const DONE = 3
const ALIVE = 4
const HASHED = 5
const STARTED = 6
const DIGEST_AT = 32
// Spins of a waiting thread before it sleeps (about 100 microseconds; also how often a read
// waiting for a digest checks the helper's pace).
const SPINS = 20_000
// sha256 on one core of the machines measured (1.5 GB/s), rounded down.
const INLINE_BYTES_PER_MS = 1_200_000

// The helper's program (CommonJS, evaluated: no file to resolve from sources or bundles). It
// hashes each job's bytes as they become final; a new job number abandons the current job.
const HELPER = `
const { workerData } = require("node:worker_threads")
const { createHash } = require("node:crypto")
const ctl = new Int32Array(workerData.control)
const digest = new Uint8Array(workerData.control, ${DIGEST_AT}, 32)
const staging = new Uint8Array(workerData.staging)
Atomics.store(ctl, ${ALIVE}, 1)
Atomics.notify(ctl, ${ALIVE})
let seen = Atomics.load(ctl, ${JOB})
for (;;) {
  Atomics.wait(ctl, ${JOB}, seen)
  const job = Atomics.load(ctl, ${JOB})
  if (job === seen) continue
  seen = job
  const size = Atomics.load(ctl, ${SIZE})
  const hash = createHash("sha256")
  let at = 0
  Atomics.store(ctl, ${HASHED}, 0)
  Atomics.store(ctl, ${STARTED}, job)
  while (at < size && Atomics.load(ctl, ${JOB}) === job) {
    const ready = Atomics.load(ctl, ${READY})
    if (ready <= at) {
      // Spin a little first: the next stretch usually comes within tens of microseconds, and
      // a thread that sleeps takes about as long to wake.
      let spins = 0
      while (Atomics.load(ctl, ${READY}) === ready && spins < ${SPINS}) spins++
      if (spins === ${SPINS}) Atomics.wait(ctl, ${READY}, ready, 100)
    }
    else {
      hash.update(staging.subarray(at, ready))
      at = ready
      Atomics.store(ctl, ${HASHED}, at)
    }
  }
  if (at < size) continue
  digest.set(hash.digest())
  Atomics.store(ctl, ${DONE}, job)
  Atomics.notify(ctl, ${DONE})
}
`

interface Helper {
  readonly control: Int32Array
  readonly digest: Uint8Array
  readonly staging: SharedArrayBuffer
  readonly bytes: Uint8Array
  readonly worker: Worker
  job: number
  retired: boolean
}

/** Ends the helper's current job (for an empty one): it goes back to waiting for the next. */
const abandon = (h: Helper): void => {
  Atomics.store(h.control, SIZE, 0)
  Atomics.store(h.control, JOB, ++h.job)
  Atomics.notify(h.control, JOB)
  Atomics.notify(h.control, READY)
}

/** Stops using the helper (reads hash inline from now on) and ends its thread. */
const retire = (h: Helper): void => {
  h.retired = true
  void h.worker.terminate()
}

let helper: Helper | undefined
let eligibleReads = 0

const start = (): Helper => {
  const shared = new SharedArrayBuffer(DIGEST_AT + 32)
  const staging = new SharedArrayBuffer(0, { maxByteLength: STAGED.max })
  const worker = new Worker(HELPER, { eval: true, workerData: { control: shared, staging } })
  const h: Helper = {
    control: new Int32Array(shared, 0, DIGEST_AT / 4),
    digest: new Uint8Array(shared, DIGEST_AT, 32),
    staging,
    bytes: new Uint8Array(staging),
    worker,
    job: 0,
    retired: false
  }
  // Never keeps the process alive; a helper that fails or ends is retired and reads hash inline.
  worker.unref()
  worker.on("error", () => retire(h))
  worker.on("exit", () => {
    h.retired = true
  })
  return h
}

const inline: HashAhead = { advance: () => {}, digest: (bytes) => sha256(bytes) }

/** Ends the helper thread, if any: hashes are inline from then on in this thread (for tests). */
export const endHelper = async (): Promise<void> => {
  if (helper === undefined) return
  helper.retired = true
  await helper.worker.terminate()
}

/** Resolves once `h`'s thread has ended (at once when it has). */
const ended = (h: Helper): Promise<void> =>
  h.retired ? Promise.resolve() : new Promise((resolve) => h.worker.once("exit", () => resolve()))

/** Resolves once the helper thread is running or has ended (for tests: no polling); at once when none was started. */
export const helperStarted = async (): Promise<void> => {
  const h = helper
  if (h === undefined) return
  const wait = Atomics.waitAsync(h.control, ALIVE, 0)
  if (wait.async) await Promise.race([wait.value, ended(h)])
}

/** Resolves once the helper has finished its latest hash (all of whose bytes were advanced) or has ended (for tests). */
export const helperCaughtUp = async (): Promise<void> => {
  const h = helper
  if (h === undefined) return
  for (let done = Atomics.load(h.control, DONE); done !== h.job && !h.retired; done = Atomics.load(h.control, DONE)) {
    const wait = Atomics.waitAsync(h.control, DONE, done)
    if (wait.async) await Promise.race([wait.value, ended(h)])
  }
}

/** Whether a hash runs on the helper thread (for tests: a full collection a moment ago keeps it inline). */
export const onHelper = (hashing: HashAhead): boolean => hashing !== inline

/** Whether the helper thread is running (for tests: `hashAhead` uses it only then). */
export const helperRunning = (): boolean => helper !== undefined && !helper.retired && Atomics.load(helper.control, ALIVE) === 1

// When this thread's heap last had a full collection (ms, `performance.now()`). V8 marks on the
// other core while a full collection runs: a helper hashing there then slows the whole read
// down (measured: reads right after 1,000 applies took 12-22 ms with the helper, 10-12 without).
let lastFullCollection = -Infinity
const QUIET_MS = 1_000

const watchCollections = (): void => {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const detail = (entry as PerformanceEntry & { readonly detail?: { readonly kind?: number; readonly flags?: number } }).detail
      // A forced one (`gc()`) is over when it returns: nothing marks on after it.
      const forced = ((detail?.flags ?? 0) & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0
      if (detail?.kind !== constants.NODE_PERFORMANCE_GC_MINOR && !forced) lastFullCollection = entry.startTime + entry.duration
    }
  }).observe({ entryTypes: ["gc"] })
}

/**
 * Resolves once no full collection has run for the quiet second the helper needs (for tests
 * that need a hash on the helper: a busy test worker collects often).
 */
export const helperQuiet = async (): Promise<void> => {
  for (;;) {
    const left = lastFullCollection + QUIET_MS - performance.now()
    if (left < 0) return
    await new Promise((resolve) => setTimeout(resolve, left + 1))
  }
}

/**
 * The running helper, if `size` bytes are worth handing to it and no full collection ran in the
 * last second (starting it on the second such read).
 */
const helperFor = (size: number): Helper | undefined => {
  if (size < STAGED.min || size > STAGED.max) return undefined
  if (helper === undefined) {
    if (++eligibleReads >= 2) {
      helper = start()
      watchCollections()
    }
    return undefined
  }
  return helperRunning() && performance.now() - lastFullCollection > QUIET_MS ? helper : undefined
}

/**
 * A hash of `size` bytes about to be written: on the helper thread when it is running and the
 * size is worth it, else inline at `digest`.
 */
export const hashAhead = (size: number): HashAhead => {
  const h = helperFor(size)
  if (h === undefined) return inline
  if (h.staging.byteLength < size) h.staging.grow(size)
  const job = ++h.job
  const { control } = h
  Atomics.store(control, SIZE, size)
  Atomics.store(control, READY, 0)
  Atomics.store(control, JOB, job)
  Atomics.notify(control, JOB)
  Atomics.notify(control, READY)
  let staged = 0
  // A hash outlived by a newer one (hashes started by one read cannot interleave; this is for
  // a caller that abandons one) must not touch the staging buffer: it hashes inline.
  const current = (): boolean => h.job === job && !h.retired
  return {
    advance: (bytes, upTo) => {
      const to = Math.min(upTo, size, bytes.length)
      if (to <= staged || !current()) return
      h.bytes.set(bytes.subarray(staged, to), staged)
      staged = to
      Atomics.store(control, READY, to)
      Atomics.notify(control, READY)
    },
    digest: (bytes) => {
      if (bytes.length !== size || !current()) return sha256(bytes)
      h.bytes.set(bytes.subarray(staged), staged)
      Atomics.store(control, READY, size)
      Atomics.notify(control, READY)
      // The helper is usually a stretch behind: spin for its digest, and measure how fast it
      // goes. A helper short of a core (the process is collecting garbage on it, say) would
      // take longer to finish than hashing everything here: then this read does that.
      const deadline = performance.now() + PATIENCE_MS
      // Until the helper has taken this job up, its count is the previous job's.
      const progressOf = (): number => Atomics.load(control, STARTED) === job ? Atomics.load(control, HASHED) : 0
      let hashed = progressOf()
      let since = performance.now()
      while (Atomics.load(control, DONE) !== job) {
        for (let spins = 0; spins < SPINS && Atomics.load(control, DONE) !== job; spins++);
        if (Atomics.load(control, DONE) === job) break
        const now = performance.now()
        const progress = progressOf()
        if (h.retired || now > deadline) {
          retire(h)
          return sha256(bytes)
        }
        const rate = Math.max(0, progress - hashed) / (now - since)
        if ((size - progress) / rate > size / INLINE_BYTES_PER_MS) {
          abandon(h)
          return sha256(bytes)
        }
        hashed = progress
        since = now
      }
      return contentAddress(h.digest.slice())
    }
  }
}
