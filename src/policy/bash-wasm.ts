import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import v8 from "node:v8";
import type { Parser } from "web-tree-sitter";
import { packageInfo } from "../config/paths.js";

let loading: Promise<Parser> | undefined;

/**
 * The bash parser, made on the first call and shared afterwards. web-tree-sitter and the grammar's
 * wasm are loaded here and nowhere else, so nothing of them is on the start-up or session/new path. A failed load is not cached:
 * the next call tries again.
 */
export function bashParser(): Promise<Parser> {
  loading ??= load().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

async function load(): Promise<Parser> {
  // Compiled with V8's optimising tier, the two wasm modules keep background threads busy for
  // about a second, and the next CommonJS module to load (execa's dependencies, when bash runs
  // its first command) waits for them: +1.3 s on a busy two-core machine. The baseline tier alone
  // compiles them at once and parses a line in well under a millisecond; hot functions may still
  // tier up afterwards. The flag is set for these two compilations only.
  v8.setFlagsFromString("--liftoff-only");
  try {
    const { Parser, Language } = await import("web-tree-sitter");
    await Parser.init();
    const bash = await Language.load(grammarFile());
    const parser = new Parser();
    parser.setLanguage(bash);
    return parser;
  } finally {
    v8.setFlagsFromString("--no-liftoff-only");
  }
}

/**
 * The bash grammar's wasm: the copy the package ships (dist/grammars/, made by scripts/bundle.mjs
 * from the tree-sitter-bash package, a build-time dependency: its C sources and native builds
 * stay out of the installed package); from a checkout not built yet, the package's own.
 */
function grammarFile(): string {
  const root = packageInfo()?.dir;
  const shipped = root ? path.join(root, "dist", "grammars", "tree-sitter-bash.wasm") : undefined;
  if (shipped && existsSync(shipped)) return shipped;
  return createRequire(import.meta.url).resolve("tree-sitter-bash/tree-sitter-bash.wasm");
}
