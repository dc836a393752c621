import { createRequire } from "node:module";
import type { Parser } from "web-tree-sitter";

let loading: Promise<Parser> | undefined;

/**
 * The bash parser, made on the first call and shared afterwards. web-tree-sitter and the grammar's
 * wasm (shipped inside the tree-sitter-bash package, no native build) are loaded here and nowhere
 * else, so nothing of them is on the start-up or session/new path. A failed load is not cached:
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
  const { Parser, Language } = await import("web-tree-sitter");
  await Parser.init();
  const require = createRequire(import.meta.url);
  const wasm = require.resolve("tree-sitter-bash/tree-sitter-bash.wasm");
  const bash = await Language.load(wasm);
  const parser = new Parser();
  parser.setLanguage(bash);
  return parser;
}
