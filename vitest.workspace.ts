import { defineWorkspace } from "vitest/config"

/** One test project per package and example (DESIGN §1); each has its own vitest.config.ts. */
export default defineWorkspace(["packages/*", "examples/*"])
