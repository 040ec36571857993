import { project } from "../../vitest.shared.js"

// Test files share one PostgreSQL server: each migrates a schema of its own, so files may
// run in parallel; the two-store races open pools of their own.
export default project("storage-postgres", { testTimeout: 30_000, hookTimeout: 60_000 })
