// Bundles the CLI into a few files so start-up reads and links one module graph instead of
// hundreds of small files (module loading was two thirds of start-up). The library entry
// (dist/index.js) is bundled beside it, over tsc's output; extension files loaded by the CLI get the
// bundle's own copy of the public entry (src/agent/extension-loader.ts hands it to the loader),
// so there is one ToolError, and all of zod from dist/zod.js, built below.
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { build } from "esbuild";
import { bundleEarlyPath } from "./early-bundle.mjs";

const BANNER =
  "import { createRequire as __thCreateRequire } from 'node:module'; let __thRequire; const require = (id) => (__thRequire ??= __thCreateRequire(import.meta.url))(id);";

const cli = await build({
  // web_fetch's extraction runs in a worker thread (src/tools/web-extract-pool.ts), which loads
  // this entry from beside the pool's own chunk.
  // The library entry (dist/index.js, for embedders) is bundled too, over tsc's output, sharing the
  // CLI's chunks: the installed package then needs only the external dependencies below (and zod,
  // which the AI SDK brings and the .d.ts name); tsc's other .js files are for the tests, not shipped.
  // So do the map of nested repositories (src/runtime/sandbox/nested-git-client.ts) and the
  // spawner of commands (src/runtime/shell/spawn-thread.ts).
  entryPoints: {
    cli: "src/cli.ts",
    index: "src/index.ts",
    "chunks/web-extract-worker": "src/tools/web-extract-worker.ts",
    "chunks/nested-git-worker": "src/runtime/sandbox/nested-git-worker.ts",
    "chunks/spawn-worker": "src/runtime/shell/spawn-worker.ts",
  },
  outdir: "dist",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20.19",
  minify: true,
  sourcemap: "linked",
  chunkNames: "chunks/[name]-[hash]",
  // rgPath is computed from its own package location, jiti loads its babel build from its own
  // folder, and esbuild (the extension transform) runs its platform binary: all must stay real
  // dependencies. web-tree-sitter finds its tree-sitter.wasm next to its own module (bundled, it
  // looks in dist/chunks and fails); the bash parser (src/policy/bash-wasm.ts) loads it lazily.
  // The AI SDK loads on the first model turn, from node_modules: bundled, its namespace use of zod
  // would keep all of zod (every locale) alive in the chunk that session/new loads.
  // The MCP SDK is bundled: its client loads (a chunk of its own) only when a session has MCP
  // servers, and the installed package does without its server-side dependencies (express, hono:
  // 17 MB). zod stays in the shared chunk it was in.
  external: ["@vscode/ripgrep", "jiti", "esbuild", "ai", "@ai-sdk/*", "web-tree-sitter"],
  // CommonJS dependencies (tree-kill, picomatch) call require() for node builtins; it is made on
  // first use (making it, in each of dozens of chunks, cost a millisecond of start-up).
  banner: { js: BANNER },
  logLevel: "warning",
  metafile: true,
  plugins: [
    {
      // The library entry's `z` is all of zod: bundled here, every zod file (locales, JSON Schema
      // import) would be live, and the chunk session/new and session/load wait for holds zod's
      // files whole. It re-exports dist/zod.js instead (built below), the zod extension files get.
      name: "library-zod",
      setup(build) {
        build.onResolve({ filter: /^zod$/ }, (args) =>
          args.importer.endsWith(`${path.sep}src${path.sep}index.ts`) ? { path: "./zod.js", external: true } : undefined,
        );
      },
    },
  ],
});

// Each module that starts a worker finds the worker's file next to itself ("./web-extract-worker.js"
// and so on, built as entries above into dist/chunks/): it must land in dist/chunks/ too.
for (const starter of ["src/tools/web-extract-pool.ts", "src/runtime/sandbox/nested-git-client.ts", "src/runtime/shell/spawn-thread.ts"]) {
  const output = Object.keys(cli.metafile.outputs).find((file) => Object.keys(cli.metafile.outputs[file].inputs).includes(starter));
  if (!output?.startsWith("dist/chunks/")) {
    throw new Error(`bundle: ${path.basename(starter)} landed in ${output ?? "no output"}, not dist/chunks/, where its worker is`);
  }
}

// What `toolhost` loads before it answers session/new, in one file (scripts/early-bundle.mjs).
await bundleEarlyPath(cli.metafile, BANNER);

// All of zod in one file, for extension files only (src/host/extension-zod.ts): the start-up
// chunk keeps just what the SDK uses, and extensions still get the whole zod API.
await build({
  stdin: { contents: 'export * from "zod"; export { z } from "zod";', resolveDir: process.cwd(), loader: "js" },
  outfile: "dist/zod.js",
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20.19",
  minify: true,
  logLevel: "warning",
});

// The bash grammar (src/policy/bash-wasm.ts): its wasm alone, with its licence and where it came
// from. tree-sitter-bash is a build-time dependency: its C sources, native prebuilds and install
// script (20 MB) stay out of the installed package.
const require = createRequire(import.meta.url);
const grammarPkg = require.resolve("tree-sitter-bash/package.json");
const grammarWasm = require.resolve("tree-sitter-bash/tree-sitter-bash.wasm");
const grammars = new URL("../dist/grammars/", import.meta.url);
mkdirSync(grammars, { recursive: true });
copyFileSync(grammarWasm, new URL("tree-sitter-bash.wasm", grammars));
copyFileSync(new URL("LICENSE", `file://${grammarPkg}`), new URL("tree-sitter-bash.LICENSE", grammars));
const lock = JSON.parse(readFileSync(new URL("../package-lock.json", import.meta.url), "utf8"));
const locked = lock.packages?.["node_modules/tree-sitter-bash"] ?? {};
writeFileSync(
  new URL("tree-sitter-bash.provenance.json", grammars),
  `${JSON.stringify(
    {
      file: "tree-sitter-bash.wasm",
      from: `tree-sitter-bash@${JSON.parse(readFileSync(grammarPkg, "utf8")).version} (npm), its tree-sitter-bash.wasm`,
      resolved: locked.resolved,
      integrity: locked.integrity,
      sha256: createHash("sha256").update(readFileSync(grammarWasm)).digest("hex"),
      license: "MIT (tree-sitter-bash.LICENSE)",
    },
    null,
    2,
  )}\n`,
);
