/**
 * The only way a process gets faults (`Fault.ts`): a sealed `FORKJOIN_FAULT`. The process that
 * wants a child to crash (the merge probe, a crash test) writes a fresh random key into a file
 * of its own (`makeKey`) and gives the child the fault with its HMAC under that key and the
 * key file's path (`seal`); the child installs the fault only when the key file is a private
 * regular file of its own user and the HMAC matches (`open`). `FORKJOIN_FAULT` set by hand, or
 * with a MAC that does not match, injects nothing.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Faults, type FaultPlan, parseFault } from "./Fault.ts"

/** The fault, as `Fault.parseFault` reads it. */
const FAULT = "FORKJOIN_FAULT"
/** The key file the HMAC was made with. */
const KEY_FILE = "FORKJOIN_FAULT_KEY_FILE"
/** HMAC-SHA256 of the fault under the key, hex. */
const MAC = "FORKJOIN_FAULT_MAC"

const KEY_BYTES = 32

const macOf = (key: Buffer, fault: string): Buffer => createHmac("sha256", key).update(fault, "utf8").digest()

/**
 * Writes a fresh random key into a new file in `directory` (readable by this user only) and
 * returns its path, for `seal`. The caller removes it (with its directory) when done.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeKey = (directory: string): string => {
  const file = path.join(directory, `fault-key-${randomBytes(8).toString("hex")}`)
  fs.writeFileSync(file, randomBytes(KEY_BYTES), { mode: 0o600, flag: "wx" })
  return file
}

/**
 * The environment variables that start a child process with `fault` (the key file from
 * `makeKey` must still exist when the child starts).
 *
 * @category constructors
 * @since 0.1.0
 */
export const seal = (fault: string, keyFile: string): Record<string, string> => ({
  [FAULT]: fault,
  [KEY_FILE]: keyFile,
  [MAC]: macOf(fs.readFileSync(keyFile), fault).toString("hex")
})

/** The key in `file` when it is a private regular file of this process's user, else undefined. */
const keyIn = (file: string): Buffer | undefined => {
  const stat = fs.lstatSync(file, { throwIfNoEntry: false })
  if (stat === undefined || !stat.isFile() || stat.size !== KEY_BYTES || (stat.mode & 0o077) !== 0) return undefined
  if (process.getuid !== undefined && stat.uid !== process.getuid()) return undefined
  return fs.readFileSync(file)
}

/** Whether `env` carries a sealed fault: `FORKJOIN_FAULT` with the HMAC of its key file. */
const isSealed = (env: NodeJS.ProcessEnv): boolean => {
  const fault = env[FAULT]
  const keyFile = env[KEY_FILE]
  const mac = env[MAC]
  if (fault === undefined || keyFile === undefined || mac === undefined || !/^[0-9a-f]{64}$/.test(mac)) return false
  const key = keyIn(keyFile)
  return key !== undefined && timingSafeEqual(macOf(key, fault), Buffer.from(mac, "hex"))
}

/**
 * The faults `env` opens: its `FORKJOIN_FAULT` when sealed (an unparsable one is a start-up
 * error naming it), none otherwise.
 *
 * @category constructors
 * @since 0.1.0
 */
export const open = (env: NodeJS.ProcessEnv): FaultPlan => parseFault(isSealed(env) ? env[FAULT] : undefined)

/**
 * `program` with the faults `env` opens installed as its `Fault.Faults`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const provide = (env: NodeJS.ProcessEnv) => <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.sync(() => open(env)), (plan) => Effect.provideService(program, Faults, plan))
