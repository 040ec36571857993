import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { Either, Option } from "effect"

/**
 * Encryption of secrets at rest (channel access tokens, docs/channels.md "The secret
 * key"): AES-256-GCM from `node:crypto` under one 32-byte key, a random 12-byte IV per
 * value, the 16-byte authentication tag stored with it. One module, used by core's
 * `Channels`, the http-adapter and the standalone server's CLI alike.
 *
 * A sealed value is the text `v1.<iv>.<tag>.<ciphertext>` (each part base64url), so
 * it fits any store's text column and never contains the secret in plaintext.
 */

/** Length of a secret key, in bytes (AES-256). */
export const SECRET_KEY_BYTES = 32

const IV_BYTES = 12
const TAG_BYTES = 16
const ALGORITHM = "aes-256-gcm"
const VERSION = "v1"

/**
 * Reads a secret key written as hex (64 characters) or base64 / base64url (44 characters
 * with padding, 43 without), surrounding whitespace ignored. Anything that does not
 * decode to exactly 32 bytes is `Left` with a message that never repeats the value.
 *
 * @category secrets
 * @example
 * import { parseSecretKey } from "@switchboard/core"
 * const key = parseSecretKey(process.env.SWITCHBOARD_SECRET_KEY ?? "")
 */
export const parseSecretKey = (text: string): Either.Either<Uint8Array, string> => {
  const value = text.trim()
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Either.right(new Uint8Array(Buffer.from(value, "hex")))
  if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(value)) {
    const bytes = Buffer.from(value.replace(/-/g, "+").replace(/_/g, "/"), "base64")
    if (bytes.length === SECRET_KEY_BYTES) return Either.right(new Uint8Array(bytes))
  }
  return Either.left(
    `must be ${SECRET_KEY_BYTES} bytes written as base64 (44 characters) or hex (64 characters), for example the output of \`openssl rand -base64 32\``
  )
}

/**
 * Reads one or several secret keys separated by commas (`SWITCHBOARD_SECRET_KEY="new,old"`),
 * each as {@link parseSecretKey} reads one; blanks around a key are ignored. The first
 * encrypts, every one decrypts, tried in this order (docs/deployment.md "Rotating the
 * secret key"). An empty entry, a malformed key or the same key twice is `Left` with a
 * message naming the entry's position, never its value.
 *
 * @category secrets
 * @example
 * import { parseSecretKeys } from "@switchboard/core"
 * const keys = parseSecretKeys(process.env.SWITCHBOARD_SECRET_KEY ?? "")
 */
export const parseSecretKeys = (text: string): Either.Either<ReadonlyArray<Uint8Array>, string> => {
  const parts = text.split(",")
  if (parts.length === 1) return Either.map(parseSecretKey(text), (key) => [key])
  const keys: Array<Uint8Array> = []
  for (const [index, part] of parts.entries()) {
    const parsed = parseSecretKey(part)
    if (Either.isLeft(parsed)) return Either.left(`key ${index + 1} of ${parts.length} (comma-separated) ${parsed.left}`)
    if (keys.some((key) => Buffer.from(key).equals(parsed.right))) {
      return Either.left(`key ${index + 1} of ${parts.length} (comma-separated) repeats an earlier key`)
    }
    keys.push(parsed.right)
  }
  return Either.right(keys)
}

/**
 * A new random secret key (32 bytes from `node:crypto`).
 *
 * @category secrets
 */
export const generateSecretKey = (): Uint8Array => new Uint8Array(randomBytes(SECRET_KEY_BYTES))

/**
 * A secret key as base64 text (44 characters), the form {@link parseSecretKey} reads and
 * the standalone server writes to its key file.
 *
 * @category secrets
 */
export const encodeSecretKey = (key: Uint8Array): string => Buffer.from(key).toString("base64")

/**
 * Encrypts `plaintext` (UTF-8) under `key` with a fresh random IV; returns the sealed
 * text `v1.<iv>.<tag>.<ciphertext>`. Two calls on the same plaintext give different
 * texts.
 *
 * @category secrets
 */
export const sealSecret = (key: Uint8Array, plaintext: string): string => {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES })
  const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return [VERSION, iv, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === "string" ? part : part.toString("base64url"))).join(".")
}

/**
 * Decrypts a text made by {@link sealSecret} under `key`, or under any of several keys,
 * tried in order. `None` when it was sealed under another key, was altered, or is not a
 * sealed text at all: GCM's tag check means a wrong key never yields a garbled plaintext.
 *
 * @category secrets
 */
export const openSecret = (key: Uint8Array | ReadonlyArray<Uint8Array>, sealed: string): Option.Option<string> => {
  if (key instanceof Uint8Array) return openUnder(key, sealed)
  for (const each of key) {
    const opened = openUnder(each, sealed)
    if (Option.isSome(opened)) return opened
  }
  return Option.none()
}

/**
 * Whether `sealed` opens under `key` (the encrypting key): `false` for a text sealed under
 * another key, which `secret-key rotate` seals again.
 *
 * @category secrets
 */
export const isSealedUnder = (key: Uint8Array, sealed: string): boolean => Option.isSome(openUnder(key, sealed))

const openUnder = (key: Uint8Array, sealed: string): Option.Option<string> => {
  const parts = sealed.split(".")
  if (parts.length !== 4 || parts[0] !== VERSION) return Option.none()
  const [iv, tag, ciphertext] = parts.slice(1).map((part) => Buffer.from(part, "base64url"))
  if (iv?.length !== IV_BYTES || tag?.length !== TAG_BYTES || ciphertext === undefined) return Option.none()
  try {
    const decipher = createDecipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES })
    decipher.setAuthTag(tag)
    return Option.some(Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString("utf8"))
  } catch {
    return Option.none()
  }
}
