import { HttpFailure } from "../HttpFailure.js"

/**
 * Reads the API key from an `Authorization` header (docs/http-adapter.md
 * "Authentication"). Returns the key, or the 401 failure: no header or no token →
 * `missing_api_key`; another scheme → `wrong_auth_scheme`; a token shaped like a JWT →
 * `jwt_not_accepted`. Whether the key is known is the domain's question.
 */
export const readApiKey = (header: string | undefined): string | HttpFailure => {
  const value = header?.trim() ?? ""
  if (value === "") return unauthorized("missing_api_key", "Missing API key: send Authorization: Bearer <API_KEY>")
  const space = value.search(/\s/)
  const scheme = space === -1 ? value : value.slice(0, space)
  const token = space === -1 ? "" : value.slice(space).trim()
  if (scheme.toLowerCase() !== "bearer") {
    return unauthorized("wrong_auth_scheme", `Unsupported authentication scheme '${scheme}': use Bearer with an API key`)
  }
  if (token === "") return unauthorized("missing_api_key", "Missing API key: send Authorization: Bearer <API_KEY>")
  if (isJwt(token)) return unauthorized("jwt_not_accepted", "User tokens (JWT) are not accepted: use an organization API key")
  return token
}

const unauthorized = (code: string, message: string) =>
  new HttpFailure({ status: 401, code, message, headers: { "www-authenticate": 'Bearer realm="api"' } })

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/

/** Three base64url parts whose first decodes to a JSON object: a JWT. */
const isJwt = (token: string): boolean => {
  // An API key has no dot: it is answered without the regular expression (every request).
  if (!token.includes(".") || !JWT_SHAPE.test(token)) return false
  try {
    const header: unknown = JSON.parse(Buffer.from(token.slice(0, token.indexOf(".")), "base64url").toString("utf8"))
    return typeof header === "object" && header !== null && !Array.isArray(header)
  } catch {
    return false
  }
}
