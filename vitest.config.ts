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

// Test files that keep a module's state to themselves (process.env and os.tmpdir() for the
// sandbox and its proxy, the attack corpus's stages): a fresh module registry each. The others share
// one per worker: importing the SDK, zod and the tools again for each of ~140 files was ~25 s of
// the suite's five minutes on two cores.
const ATTACKS = ["test/attack/**/*.test.ts", "test/attack-corpus.test.ts"];
const ISOLATED = ["test/runtime/**/*.test.ts"];
// The container image (issue 35 §2): built and run with podman or docker, `npm run test:image`.
const IMAGE = ["test/image/**/*.test.ts"];

export default defineConfig({
  test: {
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
    // `npm test` runs "isolated" and "shared"; the attack suite ("attack": every door of the sandbox
    // tried by its effect, as root and again as nobody, ~40% of the whole) is `npm run test:attack`,
    // which .ci/run runs as its own step. Its nobody runs need root; a developer's run as a user skips them.
    projects: [
      { extends: true, test: { name: "isolated", include: ISOLATED } },
      { extends: true, test: { name: "attack", include: ATTACKS } },
      { extends: true, test: { name: "image", include: IMAGE, testTimeout: 180_000 } },
      {
        extends: true,
        test: { name: "shared", include: ["test/**/*.test.ts"], exclude: [...ISOLATED, ...ATTACKS, ...IMAGE], isolate: false },
      },
    ],
  },
});
