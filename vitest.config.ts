import { defineConfig } from "vitest/config"
import projects from "./vitest.workspace.js"

/**
 * The root of the run; the projects are listed in vitest.workspace.ts (given here as
 * `projects`, which vitest reads instead of the deprecated workspace file). Worker processes
 * are not recycled after every test file (the forks pool's `isolate: false`): each project
 * says itself whether its files share a process (vitest.shared.ts `project`, reset per file
 * when `isolate` is true), and vitest still starts fresh workers between projects.
 */
export default defineConfig({
  test: {
    projects,
    poolOptions: { forks: { isolate: false } }
  }
})
