// Bundles the CLI into a few files so start-up reads and links one module graph instead of
// hundreds of small files (module loading was two thirds of start-up). The library entry
// (dist/index.js) stays tsc's output for embedders; extension files loaded by the CLI get the
// bundle's own copy of the public entry (src/agent/extension-loader.ts hands it to the loader),
// so there is one ToolError, and all of zod from dist/zod.js, built below.
import { build } from "esbuild";

const cli = await build({
  // web_fetch's extraction runs in a worker thread (src/tools/web-extract-pool.ts), which loads
  // this entry from beside the pool's own chunk.
  entryPoints: { cli: "src/cli.ts", "chunks/web-extract-worker": "src/tools/web-extract-worker.ts" },
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
  // The MCP SDK loads only when a session has MCP servers, from node_modules like the AI SDK.
  external: [
    "@vscode/ripgrep",
    "jiti",
    "esbuild",
    "ai",
    "@ai-sdk/*",
    "web-tree-sitter",
    "@modelcontextprotocol/sdk",
    "@modelcontextprotocol/sdk/*",
  ],
  // CommonJS dependencies (tree-kill, picomatch) call require() for node builtins.
  banner: { js: "import { createRequire as __thCreateRequire } from 'node:module'; const require = __thCreateRequire(import.meta.url);" },
  logLevel: "warning",
  metafile: true,
});

// The pool finds the worker as "./web-extract-worker.js" next to itself: it must sit in dist/chunks/.
const pool = Object.entries(cli.metafile.outputs).find(([, out]) => Object.keys(out.inputs).includes("src/tools/web-extract-pool.ts"));
if (!pool || !pool[0].startsWith("dist/chunks/")) {
  throw new Error(`bundle: web-extract-pool.ts landed in ${pool?.[0] ?? "no output"}, not dist/chunks/, where its worker is`);
}

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
