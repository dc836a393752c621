import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // No sandbox here: TOOLHOST_SANDBOX=off for the suite, the sandbox tests skip.
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores here: forks keep real child processes (bash, rg) isolated per file. Two workers:
    // most of a test's time is spent waiting on the processes it starts (toolhost, bwrap, MCP
    // servers), so a second worker halves the suite (235 s → 144 s quiet) without starving them.
    pool: "forks",
    maxWorkers: 2,
  },
});
