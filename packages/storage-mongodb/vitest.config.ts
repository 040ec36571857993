import { project } from "../../vitest.shared.js"

// Per project, not `vi.setConfig` in a file (files share a worker, where it does not hold):
// a real server creates each test's indexes, and the driver stand-in evaluates every filter
// over every document (the send queue's 40 racing claims take seconds there).
export default project("storage-mongodb", { testTimeout: 60_000, hookTimeout: 60_000 })
