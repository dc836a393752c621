import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// `npm test` puts this repository's node_modules/.bin on PATH, and with it the language servers
// of the dev dependencies: every .ts edit of every test would start typescript-language-server
// (a user's PATH has none of ours). The LSP tests put it back themselves.
const ownBin = path.join(path.dirname(fileURLToPath(import.meta.url)), "node_modules", ".bin");
const PATH = (process.env.PATH ?? "")
  .split(path.delimiter)
  .filter((dir) => path.resolve(dir) !== ownBin)
  .join(path.delimiter);

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
    env: { PATH },
  },
});
