import { project } from "../../vitest.shared.js"

// The CLI and server tests spawn the built programs: give them more than vitest's 5 s.
export default project("standalone-server", { testTimeout: 30_000, hookTimeout: 30_000 })
