import { describe, expect, it } from "vitest"
import { Either } from "effect"
import { checkJsonInput, containsNulCharacter, parseJsonInput } from "@switchboard/core"

// U+0000 in JSON input (docs/errors.md "Limits"): PostgreSQL cannot store it in text or
// json, so it is refused at the edge for every store, and the stores answer alike.
describe("parseJsonInput and checkJsonInput: the character U+0000", () => {
  const reason = (result: Either.Either<unknown, { readonly reason: string }>) =>
    Either.match(result, { onLeft: (problem) => problem.reason, onRight: () => "accepted" })

  it("refuses it in a string, an array item, a nested value and a key, as nul_character", () => {
    for (const text of ['"a\\u0000"', '["ok","\\u0000"]', '{"a":{"b":[{"c":"x\\u0000y"}]}}', '{"k\\u0000":1}']) {
      expect(reason(parseJsonInput(text)), text).toBe("nul_character")
      expect(reason(parseJsonInput(Buffer.from(text))), text).toBe("nul_character")
      expect(reason(checkJsonInput(JSON.parse(text))), text).toBe("nul_character")
    }
  })

  it("accepts the text of the escape itself (an escaped backslash) and other control characters", () => {
    for (const text of ['"\\\\u0000"', '{"a":"\\u0001\\t\\n"}', '{"\\\\u0000":"x"}']) {
      expect(reason(parseJsonInput(text)), text).toBe("accepted")
      expect(reason(checkJsonInput(JSON.parse(text))), text).toBe("accepted")
    }
  })

  it("walks without recursion: a 60-level nest with U+0000 at the bottom is found", () => {
    const deep = "[".repeat(60) + '"\\u0000"' + "]".repeat(60)
    expect(reason(parseJsonInput(deep))).toBe("nul_character")
    expect(containsNulCharacter(JSON.parse(deep))).toBe(true)
    expect(containsNulCharacter({ a: ["b", { c: "d" }] })).toBe(false)
  })
})
