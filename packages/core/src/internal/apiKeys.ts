import { hash, timingSafeEqual } from "node:crypto"

/** Visible start of every key; tells a Switchboard key apart from other secrets. */
export const API_KEY_PREFIX = "sb_"
/** Random bytes in a key (at least 32; docs/http-adapter.md "Authentication"). */
export const API_KEY_BYTES = 32
/** Characters of the key kept in clear as its `prefix`: `sb_` plus 8 random characters. */
export const VISIBLE_PREFIX_LENGTH = API_KEY_PREFIX.length + 8

/** Formats random bytes as a plain API key: `sb_` + base64url. */
export const formatApiKey = (bytes: Uint8Array): string =>
  API_KEY_PREFIX + Buffer.from(bytes).toString("base64url")

/**
 * SHA-256 of the key, lowercase hex (64 characters): the only form ever stored. Node's
 * one-shot `crypto.hash` (no Hash object per call; it runs on every authenticated request).
 */
export const hashApiKey = (apiKey: string): string => hash("sha256", apiKey, "hex")

/** Compares two hex hashes in constant time. */
export const hashesEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a, "hex")
  const right = Buffer.from(b, "hex")
  return left.length === right.length && timingSafeEqual(left, right)
}
