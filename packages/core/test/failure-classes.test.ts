import { describe, expect, it } from "@effect/vitest"
import { classifyFailure, CONNECT_PHASE_ERRORS, type FailureKind, graphCodeClass, TransportFailed } from "@switchboard/core"

/** Every Graph code of docs/messaging.md "Classes of failure", one row per class (ranges written out). */
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
const CODES: ReadonlyArray<readonly [FailureKind, ReadonlyArray<number>]> = [
  ["throttle", [4, 80007, 130429, 131057]],
  ["pair_rate", [131056]],
  ["transient", [1, 2, 131000, 131016]],
  ["permanent", [100, 131008, 131009, 131026, 131047, 131049, 131050, 131051, ...range(132000, 132012), 133010, 132015, 132016]],
  ["account", [0, 3, 10, 190, ...range(200, 299), 368, 131031, 131042, 131048]]
]

describe("classifyFailure (docs/messaging.md \"Classes of failure\")", () => {
  describe("by Meta's Graph code first, whatever the HTTP status", () => {
    for (const [kind, codes] of CODES) {
      it(`${kind}: ${codes.length} codes`, () => {
        for (const code of codes) {
          expect([code, graphCodeClass(code)]).toEqual([code, kind])
          expect([code, classifyFailure({ provider_code: String(code), http_status: 400 })]).toEqual([code, kind])
          expect([code, classifyFailure({ provider_code: String(code), http_status: 503 })]).toEqual([code, kind])
          expect([code, classifyFailure({ provider_code: String(code) })]).toEqual([code, kind])
        }
      })
    }

    it("the ends of the ranges are inside, their neighbours are not", () => {
      expect([199, 200, 299, 300].map(graphCodeClass)).toEqual([undefined, "account", "account", undefined])
      expect([131999, 132000, 132012, 132013, 132014].map(graphCodeClass)).toEqual([undefined, "permanent", "permanent", undefined, undefined])
    })

    it("a code in no class (or not a number) leaves the decision to the HTTP status", () => {
      expect(graphCodeClass("131030")).toBeUndefined()
      expect(graphCodeClass("rate_limited")).toBeUndefined()
      expect(graphCodeClass("")).toBeUndefined()
      expect(graphCodeClass(null)).toBeUndefined()
      expect(graphCodeClass(" 130429 ")).toBe("throttle")
      expect(classifyFailure({ provider_code: "131030", http_status: 503 })).toBe("transient")
      expect(classifyFailure({ provider_code: "131030", http_status: 429 })).toBe("throttle")
      expect(classifyFailure({ provider_code: "131030", http_status: 400 })).toBe("permanent")
      expect(classifyFailure({ provider_code: "131030", http_status: null })).toBe("permanent")
    })
  })

  describe("then the HTTP status", () => {
    it("429 is a throttle", () => {
      expect(classifyFailure({ provider_code: null, http_status: 429 })).toBe("throttle")
    })

    it("every 5xx is transient", () => {
      for (const status of range(500, 599)) expect([status, classifyFailure({ provider_code: null, http_status: status })]).toEqual([status, "transient"])
    })

    it("every other 4xx is permanent", () => {
      for (const status of range(400, 499).filter((s) => s !== 429)) {
        expect([status, classifyFailure({ provider_code: null, http_status: status })]).toEqual([status, "permanent"])
      }
    })

    it("a status that is no error says nothing: the network error decides, else permanent", () => {
      expect(classifyFailure({ provider_code: null, http_status: 302 })).toBe("permanent")
      expect(classifyFailure({ provider_code: null, http_status: 200, network_error: "UND_ERR_SOCKET" })).toBe("unknown")
    })
  })

  describe("then the network error", () => {
    it("an error while connecting is transient: the request was never written", () => {
      expect(CONNECT_PHASE_ERRORS).toEqual(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"])
      for (const code of CONNECT_PHASE_ERRORS) expect([code, classifyFailure({ provider_code: null, http_status: null, network_error: code })]).toEqual([code, "transient"])
    })

    it("any failure after connecting (reset, closed socket, timeout) is unknown", () => {
      for (const code of ["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "ETIMEDOUT", "TimeoutError"]) {
        expect([code, classifyFailure({ provider_code: null, http_status: null, network_error: code })]).toEqual([code, "unknown"])
      }
    })
  })

  it("a failure with no code, status, network error or kind is permanent (a custom transport's failures, as before)", () => {
    expect(classifyFailure({ provider_code: null })).toBe("permanent")
    expect(classifyFailure({ provider_code: null, http_status: null, network_error: null })).toBe("permanent")
    expect(classifyFailure({ provider_code: "  ", network_error: " " })).toBe("permanent")
  })

  it("an explicit kind wins over the code, the status and the network error", () => {
    expect(classifyFailure({ provider_code: "131047", http_status: 400, kind: "transient" })).toBe("transient")
    expect(classifyFailure({ provider_code: "130429", http_status: 429, kind: "account" })).toBe("account")
    expect(classifyFailure({ provider_code: null, http_status: null, network_error: "ECONNREFUSED", kind: "unknown" })).toBe("unknown")
    expect(classifyFailure({ provider_code: null, kind: "pair_rate" })).toBe("pair_rate")
  })

  it("TransportFailed: the old construction still compiles, has no status or network error, and is permanent", () => {
    const old = new TransportFailed({ reason: "not allowed", provider_code: null })
    expect([old.http_status, old.network_error, old.kind]).toEqual([null, null, undefined])
    expect(classifyFailure(old)).toBe("permanent")
    expect(classifyFailure(new TransportFailed({ reason: "throttled", provider_code: "130429" }))).toBe("throttle")
    const full = new TransportFailed({ reason: "x", provider_code: null, http_status: 503, network_error: null, kind: "unknown" })
    expect([full.http_status, classifyFailure(full)]).toEqual([503, "unknown"])
  })
})
