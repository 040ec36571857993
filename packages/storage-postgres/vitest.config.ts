import { project } from "../../vitest.shared.js"

// Test files share one PostgreSQL server: each migrates a schema of its own, so files may
// run in parallel; the two-store races open pools of their own (60 s each: per project, not
// `vi.setConfig` in a file, which does not hold where files share a worker).
export default project("storage-postgres", { testTimeout: 60_000, hookTimeout: 60_000 })
