import { describe, expect, it } from "vitest"
import { HEAP_GROWING_PERCENT, heapGrowingFlag } from "../src/heap.js"

// The standalone server bounds V8's old-generation growth over the live heap
// (docs/standalone-server.md "Memory"), unless its process was started with a factor of its own.
describe("heapGrowingFlag", () => {
  it("is --heap-growing-percent=50 by default", () => {
    expect(HEAP_GROWING_PERCENT).toBe(50)
    expect(heapGrowingFlag([], undefined)).toBe("--heap-growing-percent=50")
    expect(heapGrowingFlag(["--enable-source-maps"], "--max-old-space-size=512")).toBe("--heap-growing-percent=50")
  })

  it("keeps a factor given on the command line or in NODE_OPTIONS", () => {
    expect(heapGrowingFlag(["--heap-growing-percent=20"], undefined)).toBeNull()
    expect(heapGrowingFlag([], "--max-old-space-size=512 --heap-growing-percent=80")).toBeNull()
  })
})
