/**
 * Ed25519 keys for signed evidence (node's crypto, PEM files): `generate` a pair, `writePair`
 * to `KEYFILE` (private, mode 0600) and `KEYFILE.pub`, read either kind back with every way a
 * file can be the wrong thing refused as `key_invalid` naming the file, and `keyIdOf` a public
 * key (`sha256:` of its SPKI DER bytes), which evidence records as its signer.
 *
 * Does not own signing or verifying evidence (`Evidence.ts`) nor which keys are trusted (`Config.ts`).
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { describeSystemError, errnoOf, remedyOf } from "@forkjoin/patch/SystemError"
import type { Sha256Hash } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { AutonomyError } from "./AutonomyError.ts"
import { readRegularFile } from "./internal/regularFile.ts"

/**
 * A generated pair as PEM text (PKCS#8 private, SPKI public) and the public key's id.
 *
 * @category models
 * @since 0.1.0
 */
export interface KeyPair {
  readonly privatePem: string
  readonly publicPem: string
  readonly keyId: Sha256Hash
}

/**
 * Generates an Ed25519 pair.
 *
 * @category constructors
 * @since 0.1.0
 */
export const generate = (): KeyPair => {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519")
  return {
    privatePem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    publicPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    keyId: keyIdOf(publicKey)
  }
}

/**
 * A key's id: `sha256:` of its public key's SPKI DER bytes (a private key gives its public key's id).
 *
 * @category constructors
 * @since 0.1.0
 */
export const keyIdOf = (key: KeyObject): Sha256Hash => {
  const publicKey = key.type === "private" ? createPublicKey(key) : key
  return sha256(publicKey.export({ type: "spki", format: "der" }))
}

const invalid = (file: string, message: string, cause?: unknown): AutonomyError =>
  new AutonomyError({ code: "key_invalid", paths: [file], message, ...(cause === undefined ? {} : { cause }) })

const KEYGEN = "create a pair with `forkjoin keygen --out KEYFILE`"

type Kind = "private" | "public"

// Which PEM blocks the text holds, read from its BEGIN lines (the PEM armour is the format's own label).
const pemLabels = (text: string): ReadonlyArray<string> =>
  [...text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----/g)].map((m) => m[1]!)

const parse = (file: string, text: string, want: Kind): Result.Result<KeyObject, AutonomyError> => {
  const other: Kind = want === "private" ? "public" : "private"
  const labels = pemLabels(text)
  if (labels.length === 0) {
    return Result.fail(invalid(file, `${file} is not a PEM key file (no "-----BEGIN ...-----" line); give the ${want} key written by \`forkjoin keygen\`, or ${KEYGEN}.`))
  }
  const label = labels[0]!
  if (label === "ENCRYPTED PRIVATE KEY") {
    return Result.fail(invalid(file, `${file} is an encrypted private key; forkjoin reads unencrypted keys only: ${KEYGEN}.`))
  }
  const holds: Kind | undefined = label.endsWith("PRIVATE KEY") ? "private" : label.endsWith("PUBLIC KEY") ? "public" : undefined
  if (holds === undefined) {
    return Result.fail(invalid(file, `${file} holds a PEM "${label}", not a key; give the ${want} key written by \`forkjoin keygen\`.`))
  }
  if (holds === other) {
    return Result.fail(invalid(
      file,
      want === "private"
        ? `${file} is a public key where a private key is expected; give the file without ".pub" (forkjoin keygen writes KEYFILE and KEYFILE.pub).`
        : `${file} is a private key where a public key is expected; give the ".pub" file (forkjoin keygen writes KEYFILE and KEYFILE.pub). Never hand out the private key.`
    ))
  }
  let key: KeyObject
  try {
    key = want === "private" ? createPrivateKey({ key: text, format: "pem" }) : createPublicKey({ key: text, format: "pem" })
  } catch (cause) {
    return Result.fail(invalid(file, `${file} is not a readable ${want} key (${describeSystemError(cause)}); ${KEYGEN}.`, cause))
  }
  if (key.asymmetricKeyType !== "ed25519") {
    return Result.fail(invalid(file, `${file} is ${key.asymmetricKeyType === undefined ? "not an Ed25519 key" : `an ${key.asymmetricKeyType} key`}; forkjoin signs evidence with Ed25519 keys only: ${KEYGEN}.`))
  }
  return Result.succeed(key)
}

/**
 * Reads PEM text as an Ed25519 private key; `file` names it in errors.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parsePrivate = (file: string, text: string): Result.Result<KeyObject, AutonomyError> => parse(file, text, "private")

/**
 * Reads PEM text as an Ed25519 public key; `file` names it in errors.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parsePublic = (file: string, text: string): Result.Result<KeyObject, AutonomyError> => parse(file, text, "public")

// An Ed25519 PEM key is a few hundred bytes; anything far larger is not one.
const MAX_KEY_BYTES = 64 * 1024

const readKey = (file: string, want: Kind): Effect.Effect<KeyObject, AutonomyError> =>
  Effect.suspend(() => {
    const absolute = path.resolve(file)
    const found = readRegularFile(absolute, MAX_KEY_BYTES)
    switch (found._tag) {
      case "Missing":
        return Effect.fail(invalid(
          absolute,
          want === "private"
            ? `the private key ${absolute} does not exist; ${KEYGEN}.`
            : `the public key ${absolute} does not exist; copy the KEYFILE.pub that \`forkjoin keygen\` wrote, or fix the path.`
        ))
      case "NotRegular":
        return Effect.fail(invalid(absolute, `${absolute} is ${found.kind}, not a key file, so it was not read; give the ${want} key file \`forkjoin keygen\` wrote.`))
      case "TooLarge":
        return Effect.fail(invalid(absolute, `${absolute} is ${found.size} bytes or more, far larger than a key; give the ${want} key file \`forkjoin keygen\` wrote.`))
      case "Failed": {
        const remedy = remedyOf(found.cause)
        return Effect.fail(invalid(
          absolute,
          `the ${want} key ${absolute} cannot be read (${describeSystemError(found.cause)})${remedy === undefined ? "" : `; ${remedy}`}.`,
          found.cause
        ))
      }
      case "Text":
        break
    }
    const parsed = parse(absolute, found.text, want)
    return Result.isSuccess(parsed) ? Effect.succeed(parsed.success) : Effect.fail(parsed.failure)
  })

/**
 * Reads an Ed25519 private key PEM file (`key_invalid` naming the file when it is anything else).
 *
 * @category constructors
 * @since 0.1.0
 */
export const readPrivate = (file: string): Effect.Effect<KeyObject, AutonomyError> => readKey(file, "private")

/**
 * Reads an Ed25519 public key PEM file (`key_invalid` naming the file when it is anything else).
 *
 * @category constructors
 * @since 0.1.0
 */
export const readPublic = (file: string): Effect.Effect<KeyObject, AutonomyError> => readKey(file, "public")

/**
 * What `writePair` wrote.
 *
 * @category models
 * @since 0.1.0
 */
export interface WrittenPair {
  readonly privateFile: string
  readonly publicFile: string
  readonly keyId: Sha256Hash
}

/**
 * Generates a pair and writes the private key to `file` (mode 0600) and the public key to
 * `file.pub`, creating the folder. Refuses (`key_exists`) when either file exists: a key is never
 * overwritten.
 *
 * @category constructors
 * @since 0.1.0
 */
export const writePair = (file: string): Effect.Effect<WrittenPair, AutonomyError> =>
  Effect.suspend(() => {
    const privateFile = path.resolve(file)
    const publicFile = `${privateFile}.pub`
    const existing = [privateFile, publicFile].filter((f) => fs.existsSync(f))
    if (existing.length > 0) {
      return Effect.fail(new AutonomyError({
        code: "key_exists",
        paths: existing,
        message: `${existing.join(" and ")} already exist${existing.length === 1 ? "s" : ""}; forkjoin never overwrites a key. ` +
          "Choose another --out, or move the old key away first (evidence signed with it stays verifiable only with its .pub)."
      }))
    }
    const pair = generate()
    const failed = (target: string, cause: unknown) => {
      const remedy = remedyOf(cause)
      return Effect.fail(new AutonomyError({
        code: errnoOf(cause) === "EEXIST" ? "key_exists" : "key_unwritable",
        paths: [target],
        message: `cannot write ${target} (${describeSystemError(cause)})${remedy === undefined ? "" : `; ${remedy}`}.`,
        cause
      }))
    }
    try {
      fs.mkdirSync(path.dirname(privateFile), { recursive: true })
      // "wx": created here or refused, so a key appearing meanwhile is not overwritten either.
      fs.writeFileSync(privateFile, pair.privatePem, { flag: "wx", mode: 0o600 })
    } catch (cause) {
      return failed(privateFile, cause)
    }
    try {
      fs.writeFileSync(publicFile, pair.publicPem, { flag: "wx", mode: 0o644 })
    } catch (cause) {
      // No half pair: the private key without its .pub would block the next keygen.
      try {
        fs.rmSync(privateFile, { force: true })
      } catch {
        // reported below through the write's own error
      }
      return failed(publicFile, cause)
    }
    return Effect.succeed({ privateFile, publicFile, keyId: pair.keyId })
  })
