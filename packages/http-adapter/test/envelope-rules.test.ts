import { describe, expect, it } from "vitest"
import { envelopeProblems } from "./helpers.js"

// The envelope check every endpoint test relies on (helpers.ts envelopeProblems): each rule
// of docs/http-api.md "Envelope" is caught when an answer breaks it.

const failure = (overrides: Record<string, unknown> = {}) =>
  JSON.stringify({ status: 400, success: false, message: "Bad", data: null, errors: [{ code: "invalid_input", message: "x", field: "a" }], ...overrides })

describe("envelopeProblems", () => {
  it("finds nothing in a success and a failure that keep the rules", () => {
    expect(envelopeProblems(200, JSON.stringify({ status: 200, success: true, message: "OK", data: { a: 1 }, errors: [] }))).toEqual([])
    expect(envelopeProblems(400, failure())).toEqual([])
    const window = failure({ errors: [{ code: "outside_customer_service_window", message: "x", window_expires_at: "2026-01-01T00:00:00.000Z" }] })
    expect(envelopeProblems(400, window)).toEqual([])
  })

  it("names each broken rule", () => {
    const cases: ReadonlyArray<readonly [number, string, string]> = [
      [500, failure({ status: 500 }), "HTTP status 500 is not below 500"],
      [400, failure({ message: "Error: x\n    at run (/srv/app/handler.js:10:5)" }), "the body shows a stack frame or a source path"],
      [400, "<html>", "the body is not JSON"],
      [400, "[]", "the body is not a JSON object"],
      [400, failure({ extra: 1 }), "the envelope's keys are data, errors, extra, message, status, success"],
      [400, failure({ status: 404 }), "status 404 is not the HTTP status 400"],
      [400, failure({ message: 3 }), "message is not a string"],
      [400, failure({ errors: {} }), "errors is not an array"],
      [200, JSON.stringify({ status: 200, success: false, message: "OK", data: null, errors: [] }), "success is not true on a 200"],
      [200, JSON.stringify({ status: 200, success: true, message: "OK", data: null, errors: [{ code: "x", message: "y" }] }), "errors is not empty on a 200"],
      [400, failure({ success: true }), "success is not false on a failure"],
      [400, failure({ data: {} }), "data is not null on a failure"],
      [400, failure({ errors: [] }), "errors is empty on a failure"],
      [400, failure({ errors: ["x"] }), "errors[0] is not an object"],
      [400, failure({ errors: [{ code: "Invalid Input", message: "x" }] }), "errors[0].code Invalid Input is not a snake_case code"],
      [400, failure({ errors: [{ code: "invalid_input", message: 1 }] }), "errors[0].message is not a string"],
      [400, failure({ errors: [{ code: "invalid_input", message: "x", stack: "s" }] }), "errors[0] has the key stack"],
      [400, failure({ errors: [{ code: "invalid_input", message: "x", window_expires_at: "t" }] }), "errors[0] has the key window_expires_at"],
      [400, failure({ errors: [{ code: "invalid_input", message: "x", field: 2 }] }), "errors[0].field is not a string"]
    ]
    for (const [status, body, problem] of cases) expect(envelopeProblems(status, body), body).toContain(problem)
  })
})
