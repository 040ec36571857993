import { createHash } from "node:crypto"
import { Effect, Exit } from "effect"
import stringify from "safe-stable-stringify"
import { IDEMPOTENCY_KEY_PATTERN, Idempotency, type OrganizationId } from "@switchboard/core"
import type { ApiResponse, Envelope } from "./envelope.js"
import { HttpFailure } from "./HttpFailure.js"
import type { RouteIdempotency } from "./routes/route.js"

// The Idempotency-Key step of the handler core, for routes declared `idempotent`
// (docs/messaging.md "Idempotency-Key"): after authentication, the rate limit and the
// body's parsing, before the body's validation and the handler.

/**
 * The request's `Idempotency-Key`: `undefined` when the header is absent; 400
 * `invalid_idempotency_key` when it is not 1–255 visible ASCII characters (an empty header
 * included).
 */
export const readIdempotencyKey = (header: string | undefined): string | undefined | HttpFailure => {
  if (header === undefined) return undefined
  if (IDEMPOTENCY_KEY_PATTERN.test(header)) return header
  return new HttpFailure({
    status: 400,
    code: "invalid_idempotency_key",
    message: "Idempotency-Key must be 1 to 255 visible ASCII characters, without spaces"
  })
}

/**
 * What makes two requests with one key "the same request": SHA-256 (hex) of the method,
 * the path and the canonical JSON of the parsed body (keys sorted), so whitespace and key
 * order do not matter.
 */
export const fingerprintOf = (method: string, path: string, body: unknown): string =>
  createHash("sha256")
    .update(`${method} ${path}\n${stringify(body) ?? ""}`)
    .digest("hex")

/**
 * Runs `run` (the rest of the request, never failing: every error already an envelope
 * response) under `key`: a stored 200 of the same request is replayed with
 * `Idempotent-Replayed: true`; the same request still running → 409
 * `idempotency_key_in_progress`; the key used for another request → 422
 * `idempotency_key_reused`. Once claimed, `run` gets the claim (the record's
 * `resourceUuid`, and whether this is a takeover of a claim whose process died) and is not
 * interrupted (a client that went away retries, and must find the outcome); a 200 is
 * stored, anything else gives the key back.
 */
export const withIdempotencyKey = <R>(
  organizationId: OrganizationId,
  key: string,
  fingerprint: string,
  run: (claim: RouteIdempotency) => Effect.Effect<ApiResponse, never, R>
) =>
  Effect.gen(function* () {
    const idempotency = yield* Idempotency
    const claim = yield* idempotency.claim(organizationId, key, fingerprint)
    switch (claim._tag) {
      case "Completed":
        return replayOf(claim.status, claim.body)
      case "InProgress":
        return yield* new HttpFailure({
          status: 409,
          code: "idempotency_key_in_progress",
          message: "A request with this Idempotency-Key is still being processed; retry later"
        })
      case "FingerprintMismatch":
        return yield* new HttpFailure({
          status: 422,
          code: "idempotency_key_reused",
          message: "This Idempotency-Key was used for another request (method, path or body differ)"
        })
      case "Claimed":
        return yield* Effect.uninterruptible(
          runClaimed(organizationId, key, run({ resourceUuid: claim.resourceUuid, takeover: claim.takeover }))
        )
    }
  })

const runClaimed = <R>(organizationId: OrganizationId, key: string, run: Effect.Effect<ApiResponse, never, R>) =>
  Effect.gen(function* () {
    const idempotency = yield* Idempotency
    const response = yield* Effect.onExit(run, (exit) =>
      Exit.isSuccess(exit) ? Effect.void : Effect.ignore(idempotency.release(organizationId, key))
    )
    const settled =
      response.status === 200
        ? idempotency.complete(organizationId, key, { status: response.status, body: JSON.stringify(response.body) })
        : idempotency.release(organizationId, key)
    // The operation itself succeeded or failed already: a store that cannot record that
    // is logged, and the client still gets the operation's answer.
    yield* Effect.catchAll(settled, (error) => Effect.logError("Idempotency-Key record failed", error.cause))
    return response
  })

const replayOf = (status: number, body: string): ApiResponse => ({
  status,
  headers: { "idempotent-replayed": "true" },
  body: JSON.parse(body) as Envelope
})
