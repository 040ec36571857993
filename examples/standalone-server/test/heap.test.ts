import { describe, expect, it } from "vitest"
import { HEAP_GROWING_PERCENT, serverV8Flags } from "../src/heap.js"

// The standalone server bounds V8's old-generation growth over the live heap and turns off
// allocation-site pretenuring (docs/standalone-server.md "Memory"), unless its process was
// started with a setting of its own for either.
describe("serverV8Flags", () => {
  it("is --heap-growing-percent=50 and --no-allocation-site-pretenuring by default", () => {
    expect(HEAP_GROWING_PERCENT).toBe(50)
    const both = ["--heap-growing-percent=50", "--no-allocation-site-pretenuring"]
    expect(serverV8Flags([], undefined)).toEqual(both)
    expect(serverV8Flags(["--enable-source-maps"], "--max-old-space-size=512")).toEqual(both)
  })

  it("keeps a growing factor given on the command line or in NODE_OPTIONS, either spelling", () => {
    expect(serverV8Flags(["--heap-growing-percent=20"], undefined)).toEqual(["--no-allocation-site-pretenuring"])
    expect(serverV8Flags([], "--max-old-space-size=512 --heap-growing-percent=80")).toEqual(["--no-allocation-site-pretenuring"])
    expect(serverV8Flags(["--heap_growing_percent=30"], undefined)).toEqual(["--no-allocation-site-pretenuring"])
  })

  it("reads a flag only by its whole name", () => {
    const both = ["--heap-growing-percent=50", "--no-allocation-site-pretenuring"]
    expect(serverV8Flags(["--heap-growing-percentage=20", "--allocation-site-pretenuring-extra"], undefined)).toEqual(both)
  })

  it("keeps a pretenuring setting given on the command line or in NODE_OPTIONS, either spelling", () => {
    expect(serverV8Flags(["--allocation-site-pretenuring"], undefined)).toEqual(["--heap-growing-percent=50"])
    expect(serverV8Flags([], "--no-allocation_site_pretenuring")).toEqual(["--heap-growing-percent=50"])
    expect(serverV8Flags(["--heap-growing-percent=80", "--no-allocation-site-pretenuring"], undefined)).toEqual([])
  })
})
