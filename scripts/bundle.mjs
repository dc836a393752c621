// Bundles the CLI into a few files so start-up reads and links one module graph instead of
// hundreds of small files (module loading was two thirds of start-up). The library entry
// (dist/index.js) stays tsc's output, so extensions and embedders import plain modules.
import { build } from "esbuild";

await build({
  entryPoints: { cli: "src/cli.ts" },
  outdir: "dist",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20.19",
  minify: true,
  sourcemap: "linked",
  chunkNames: "chunks/[name]-[hash]",
  // rgPath is computed from its own package location; it must stay a real dependency.
  external: ["@vscode/ripgrep"],
  // CommonJS dependencies (tree-kill, picomatch, shell-quote) call require() for node builtins.
  banner: { js: "import { createRequire as __thCreateRequire } from 'node:module'; const require = __thCreateRequire(import.meta.url);" },
  logLevel: "warning",
});
